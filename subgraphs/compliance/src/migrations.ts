import type { Db } from 'mongodb';
import { convertOnce, type Migration, type MigrationLog } from '../../../platform/mongo/migrations.js';
import { legacyAmounts } from '../../../platform/money/legacy.js';
import { HOME_CURRENCY } from '../../../platform/money/money.js';
import { restrictionsCollection } from './restrictions/datasource.js';
import { returnRateCollections } from './return-rates/datasource.js';

/** The report amounts ACH return rates keep, in US dollars. */
const REPORT_AMOUNTS = [
  'adminReturnsAmount',
  'unAuthorizedReturnsAmount',
  'totalReturnsAmount',
  'nsfReturnsAmount',
  'fedDRAmount',
] as const;

const MONEY_ID = 'compliance-money-in-minor-units';

/**
 * Restriction bounds and report amounts were stored as floats in the currency's units; they are
 * integers of its minor units now. A bound without a currency applied in the transaction's
 * currency, whatever it was; no unit can be read without one, so it takes the rule's only
 * currency where it names one, and USD otherwise, which the log reports.
 */
const MONEY_IN_MINOR_UNITS: Migration = {
  id: MONEY_ID,
  async run(db: Db, log: MigrationLog) {
    const restrictions = restrictionsCollection(db).collectionName;
    await convertOnce(db, restrictions, MONEY_ID, (doc) => {
      const listed = Array.isArray(doc.transactionCurrencies) ? doc.transactionCurrencies.filter((code) => code !== '*') : [];
      const changes: Record<string, unknown> = {};
      for (const side of ['from', 'to'] as const) {
        if (typeof doc[`${side}Amount`] !== 'number') continue;
        let currency = doc[`${side}AmountCurrency`];
        if (typeof currency !== 'string') {
          currency = listed.length === 1 && typeof listed[0] === 'string' ? listed[0] : HOME_CURRENCY;
          if (listed.length !== 1)
            log('restriction bound without a currency given USD', { migration: MONEY_ID, _id: doc._id, field: `${side}Amount` });
        }
        Object.assign(changes, legacyAmounts(log, { migration: MONEY_ID, collection: restrictions }, doc, [`${side}Amount`], currency), {
          [`${side}AmountCurrency`]: currency,
        });
      }
      return Object.keys(changes).length > 0 ? changes : null;
    });
    const reports = returnRateCollections(db).reports.collectionName;
    await convertOnce(db, reports, MONEY_ID, (doc) =>
      legacyAmounts(log, { migration: MONEY_ID, collection: reports }, doc, REPORT_AMOUNTS, HOME_CURRENCY),
    );
  },
};

/** The compliance database's migrations, oldest first. */
export const COMPLIANCE_MIGRATIONS: readonly Migration[] = [MONEY_IN_MINOR_UNITS];
