import type { Collection, Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';

/** A funds transaction of an aggregator (card funding and its ledger), as the aggregator spec lists it. */
export interface FundsTransactionDocument {
  _id: string;
  svcFundsId: string;
  svcAggregatorId: string;
  reference: string | null;
  type: 'debit' | 'credit';
  svcCardId: string | null;
  svcStatus: string;
  boTransId: string | null;
  arn: string | null;
  /** Amounts in cents: an aggregator's funding is in US dollars. */
  fee: MinorUnits;
  balance: MinorUnits;
  lastDepositAmount: MinorUnits;
  ledgerBalance: MinorUnits;
  dtsCreatedAt: Date;
}

export function fundsTransactionsCollection(db: Db): Collection<FundsTransactionDocument> {
  return db.collection<FundsTransactionDocument>('fundsTransactions');
}

/** The indexes of every query on these collections. */
export async function createFundsIndexes(db: Db): Promise<void> {
  await fundsTransactionsCollection(db).createIndex({ svcAggregatorId: 1, reference: 1 });
  await fundsTransactionsCollection(db).createIndex({ svcAggregatorId: 1, arn: 1 });
}
