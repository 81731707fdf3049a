import type DataLoader from 'dataloader';
import type { Db } from 'mongodb';
import { loaderByKey, loaderOfGroups } from '../../../platform/loaders.js';
import type { RequestBase } from '../../../platform/subgraph.js';
import { AchForwarder, AchLedger } from './ach.js';
import { accountsCollection, type AccountDocument } from './datasources/accounts.js';
import { achPaymentsCollection, type AchPaymentDocument } from './datasources/ach.js';
import { beneficiariesCollection, type BeneficiaryDocument } from './datasources/beneficiaries.js';
import { transactionPagesLoader, transactionsCollection, type TransactionDocument, type TransactionPage } from './datasources/transactions.js';

/** The payments subgraph's per-request context. */
export interface PaymentsContext extends RequestBase {
  db: Db;
  accounts: DataLoader<string, AccountDocument | null>;
  accountsOfUser: DataLoader<string, AccountDocument[]>;
  transactions: DataLoader<string, TransactionDocument | null>;
  transactionPages: DataLoader<string, TransactionPage>;
  beneficiaries: DataLoader<string, BeneficiaryDocument | null>;
  /** A user's beneficiaries that are not deleted, favourites first. */
  beneficiariesOfUser: DataLoader<string, BeneficiaryDocument[]>;
  achPayments: DataLoader<string, AchPaymentDocument | null>;
  ach: AchLedger;
  /** Sends pending ACH events on to compliance now (also done on a timer). */
  forwardAchEvents(): void;
}

export function createPaymentsContext(base: RequestBase, db: Db, forwarder: AchForwarder): PaymentsContext {
  const accounts = accountsCollection(db);
  const transactions = transactionsCollection(db);
  const beneficiaries = beneficiariesCollection(db);
  return {
    ...base,
    db,
    accounts: loaderByKey(accounts),
    accountsOfUser: loaderOfGroups(accounts, 'SvcUserId', { sort: { _id: 1 } }),
    transactions: loaderByKey(transactions),
    transactionPages: transactionPagesLoader(transactions),
    beneficiaries: loaderByKey(beneficiaries),
    beneficiariesOfUser: loaderOfGroups(beneficiaries, 'SvcUserId', { sort: { isFavourite: -1, name: 1, _id: 1 }, filter: { isDeleted: false } }),
    achPayments: loaderByKey(achPaymentsCollection(db)),
    ach: new AchLedger(db, base.logger),
    forwardAchEvents: () => void forwarder.forward(),
  };
}
