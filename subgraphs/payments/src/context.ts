import type DataLoader from 'dataloader';
import type { Db } from 'mongodb';
import { loaderByKey, loaderOfGroups } from '../../../platform/graphql/loaders.js';
import type { RequestBase } from '../../../platform/graphql/subgraph.js';
import { AchLedger } from './ach.js';
import { Beneficiaries } from './beneficiaries.js';
import { accountsCollection, type AccountDocument } from './datasources/accounts.js';
import { achPaymentsCollection, type AchPaymentDocument } from './datasources/ach.js';
import { beneficiariesCollection, type BeneficiaryDocument } from './datasources/beneficiaries.js';
import { iouAccountsCollection, iouTransactionsCollection, type IouAccountDocument, type IouTransactionDocument } from './datasources/ious.js';
import { merchantsCollection, type MerchantDocument } from './datasources/merchants.js';
import { paymentLinksCollection, type PaymentLinkDocument } from './datasources/payment-links.js';
import { transactionPagesLoader, transactionsCollection, type TransactionDocument, type TransactionPage } from './datasources/transactions.js';
import { deliveriesCollection, type Deliveries, type DeliveryDocument } from './deliveries.js';
import { Ious } from './ious.js';
import { Merchants } from './merchants.js';
import { PaymentLinks } from './payment-links.js';
import { Refunds } from './refunds.js';
import type { GraphClient } from '../../../platform/graphql/graph-client.js';
import type { PaymentLinkOptions } from './payment-links.js';

/** What the payments subgraph shares between requests. */
export interface PaymentsServices {
  db: Db;
  deliveries: Deliveries;
  graph: GraphClient;
  links: PaymentLinkOptions;
  /** WEBHOOK_ALLOW_INTERNAL: whether webhook URLs may be loopback, private or plain http. */
  allowInternalWebhooks: boolean;
}

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
  iouAccountsOfLender: DataLoader<string, IouAccountDocument[]>;
  iouAccountsOfBorrower: DataLoader<string, IouAccountDocument[]>;
  /** An IOU account's transactions, oldest first. */
  iouTransactionsOfAccount: DataLoader<string, IouTransactionDocument[]>;
  merchants: DataLoader<string, MerchantDocument | null>;
  paymentLinks: DataLoader<string, PaymentLinkDocument | null>;
  ach: AchLedger;
  beneficiaryBook: Beneficiaries;
  ious: Ious;
  merchantBook: Merchants;
  links: PaymentLinks;
  refunds: Refunds;
  /** Webhook and email deliveries: resend, endpoint enabling. */
  deliveries: Deliveries;
  deliveryLoader: DataLoader<string, DeliveryDocument | null>;
}

export function createPaymentsContext(base: RequestBase, services: PaymentsServices): PaymentsContext {
  const { db, deliveries } = services;
  const accounts = accountsCollection(db);
  const transactions = transactionsCollection(db);
  const beneficiaries = beneficiariesCollection(db);
  const iouAccounts = iouAccountsCollection(db);
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
    iouAccountsOfLender: loaderOfGroups(iouAccounts, 'SvcUserId', { sort: { dtsModified: -1, _id: 1 } }),
    iouAccountsOfBorrower: loaderOfGroups(iouAccounts, 'otherSvcUserId', { sort: { dtsModified: -1, _id: 1 } }),
    iouTransactionsOfAccount: loaderOfGroups(iouTransactionsCollection(db), 'IOUAccountId', { sort: { dts: 1, _id: 1 } }),
    merchants: loaderByKey(merchantsCollection(db)),
    paymentLinks: loaderByKey(paymentLinksCollection(db)),
    ach: new AchLedger(db, base.logger, deliveries, services.allowInternalWebhooks),
    beneficiaryBook: new Beneficiaries(db),
    ious: new Ious(db, services.graph),
    merchantBook: new Merchants(db, services.links.jwtSecret, base.logger, services.allowInternalWebhooks, base.audit),
    links: new PaymentLinks(db, deliveries, services.links, base.logger, base.audit),
    refunds: new Refunds(db, services.allowInternalWebhooks),
    deliveries,
    deliveryLoader: loaderByKey(deliveriesCollection(db)),
  };
}
