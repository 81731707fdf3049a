import type { Db } from 'mongodb';
import { convertOnce, type Migration } from '../../../platform/mongo/migrations.js';
import { minorFromLegacy } from '../../../platform/money/money.js';
import { restrictionsCollection } from './restrictions/datasource.js';
import { returnRateCollections } from './return-rates/datasource.js';

/** The report amounts ACH return rates keep, in US dollars. */
const REPORT_AMOUNTS = ['adminReturnsAmount', 'unAuthorizedReturnsAmount', 'totalReturnsAmount', 'nsfReturnsAmount', 'fedDRAmount'] as const;

const MONEY_ID = 'compliance-money-in-minor-units';

/**
 * Restriction bounds and report amounts were stored as floats in the currency's units; they are
 * integers of its minor units now. A bound without a currency applied in any currency; it now
 * carries one, the home currency USD, as no unit can be read without it.
 */
export const MONEY_IN_MINOR_UNITS: Migration = {
  id: MONEY_ID,
  async run(db: Db) {
    await convertOnce(db, restrictionsCollection(db).collectionName, MONEY_ID, (doc) => {
      const changes: Record<string, unknown> = {};
      for (const side of ['from', 'to'] as const) {
        const amount = doc[`${side}Amount`];
        if (typeof amount !== 'number') continue;
        const currency = typeof doc[`${side}AmountCurrency`] === 'string' ? (doc[`${side}AmountCurrency`] as string) : 'USD';
        changes[`${side}Amount`] = minorFromLegacy(amount, currency);
        changes[`${side}AmountCurrency`] = currency;
      }
      return Object.keys(changes).length > 0 ? changes : null;
    });
    await convertOnce(db, returnRateCollections(db).reports.collectionName, MONEY_ID, (doc) => {
      const changes = Object.fromEntries(REPORT_AMOUNTS.filter((name) => typeof doc[name] === 'number').map((name) => [name, minorFromLegacy(doc[name] as number, 'USD')]));
      return Object.keys(changes).length > 0 ? changes : null;
    });
  },
};

/** The compliance database's migrations, oldest first. */
export const COMPLIANCE_MIGRATIONS: readonly Migration[] = [MONEY_IN_MINOR_UNITS];
