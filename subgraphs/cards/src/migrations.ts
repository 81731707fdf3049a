import type { Db } from 'mongodb';
import { convertOnce, type Migration, type MigrationLog } from '../../../platform/mongo/migrations.js';
import { legacyAmounts } from '../../../platform/money/legacy.js';
import { cardMessagesCollection } from './authorization/datasource.js';

const MONEY_ID = 'cards-money-in-minor-units';

/** Card messages stored their amount as a float in the currency's units; it is an integer of its minor units now. */
export const MONEY_IN_MINOR_UNITS: Migration = {
  id: MONEY_ID,
  async run(db: Db, log: MigrationLog) {
    const messages = cardMessagesCollection(db);
    // A claim still pending belongs to a process that stopped before it decided; without it, the
    // network's retransmission is decided afresh instead of being compared with an old-unit amount.
    await messages.deleteMany({ state: 'pending' });
    await convertOnce(db, messages.collectionName, MONEY_ID, (doc) => legacyAmounts(log, { migration: MONEY_ID, collection: messages.collectionName }, doc, ['amount'], doc.currency));
  },
};

/** The cards database's migrations, oldest first. */
export const CARDS_MIGRATIONS: readonly Migration[] = [MONEY_IN_MINOR_UNITS];
