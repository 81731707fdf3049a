import type { Db } from 'mongodb';
import { DEMO } from '../../../platform/demo.js';
import { restrictionsCollection, type RestrictionDocument } from './datasources/restrictions.js';

/** Seeds the demo user's two restrictions. Idempotent. */
export async function seedCompliance(db: Db): Promise<void> {
  const restrictions: RestrictionDocument[] = [
    {
      _id: 'demo_restriction_1', restrictionId: 'demo_restriction_1', SvcUserId: DEMO.userId,
      restrictionName: 'noInternational', description: 'International transfers are not allowed.',
      txnTypes: ['international'], transactionCurrencies: ['*'], fromAmount: null, toAmount: null,
      fromAmountCurrency: null, toAmountCurrency: null, isAllowed: false, isIgnoreRest: true, priority: 0,
    },
    {
      _id: 'demo_restriction_2', restrictionId: 'demo_restriction_2', SvcUserId: DEMO.userId,
      restrictionName: 'domesticUpTo5000', description: 'Domestic payments up to 5,000 USD.',
      txnTypes: ['*'], transactionCurrencies: ['USD'], fromAmount: 0, toAmount: 5000,
      fromAmountCurrency: 'USD', toAmountCurrency: 'USD', isAllowed: true, isIgnoreRest: false, priority: 1,
    },
  ];
  for (const restriction of restrictions) {
    await restrictionsCollection(db).updateOne({ _id: restriction._id }, { $setOnInsert: restriction }, { upsert: true });
  }
}
