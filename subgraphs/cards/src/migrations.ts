import type { Db } from 'mongodb';
import { convertOnce, type Migration } from '../../../platform/mongo/migrations.js';
import { minorFromLegacy } from '../../../platform/money/money.js';
import { cardMessagesCollection } from './authorization/datasource.js';

const MONEY_ID = 'cards-money-in-minor-units';

/** Card messages stored their amount as a float in the currency's units; it is an integer of its minor units now. */
export const MONEY_IN_MINOR_UNITS: Migration = {
  id: MONEY_ID,
  async run(db: Db) {
    // A claim still pending (no currency yet) is decided afresh by the network's retransmission.
    await convertOnce(db, cardMessagesCollection(db).collectionName, MONEY_ID, (doc) =>
      typeof doc.amount === 'number' && typeof doc.currency === 'string' ? { amount: minorFromLegacy(doc.amount, doc.currency) } : null);
  },
};

/** The cards database's migrations, oldest first. */
export const CARDS_MIGRATIONS: readonly Migration[] = [MONEY_IN_MINOR_UNITS];
