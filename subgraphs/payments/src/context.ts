import type { CardHoldPolicy } from './accounts/card-holds.js';
import type DataLoader from 'dataloader';
import type { Db, Filter } from 'mongodb';
import { checkPage, readPage } from '../../../platform/graphql/paging.js';
import { AccountBook } from './accounts/transactions.js';
import { retrieveFunds } from './funds/funds.js';
import { loaderByKey, loaderOfGroups } from '../../../platform/graphql/loaders.js';
import type { RequestBase } from '../../../platform/graphql/subgraph.js';
import { AchLedger } from './ach/ach-ledger.js';
import { Beneficiaries } from './beneficiaries/beneficiaries.js';
import { accountsCollection, type AccountDocument } from './accounts/datasource.js';
import { achPaymentsCollection, type AchPaymentDocument } from './ach/datasource.js';
import { beneficiariesCollection, type BeneficiaryDocument } from './beneficiaries/datasource.js';
import {
  iouAccountsCollection,
  iouTransactionsCollection,
  type IouAccountDocument,
  type IouTransactionDocument,
} from './ious/datasource.js';
import { merchantsCollection, type MerchantDocument } from './merchants/datasource.js';
import { paymentLinksCollection, type PaymentLinkDocument } from './payment-links/datasource.js';
import {
  transactionPagesLoader,
  transactionsCollection,
  type TransactionDocument,
  type TransactionPage,
} from './accounts/transactions-datasource.js';
import { deliveriesCollection, type Deliveries, type DeliveryDocument } from './merchants/deliveries.js';
import { Ious } from './ious/ious.js';
import { Merchants } from './merchants/merchants.js';
import { PaymentLinks } from './payment-links/payment-links.js';
import { Refunds } from './payment-links/refunds.js';
import type { GraphClient } from '../../../platform/contracts/graph.js';
import type { PaymentLinkOptions } from './payment-links/payment-links.js';

/** What the payments subgraph shares between requests. */
export interface PaymentsServices {
  db: Db;
  deliveries: Deliveries;
  graph: GraphClient;
  links: PaymentLinkOptions;
  /** WEBHOOK_ALLOW_INTERNAL: whether webhook URLs may be loopback, private or plain http. */
  allowInternalWebhooks: boolean;
  /** CARD_OVERDRAFT_LIMIT and CARD_HOLD_EXPIRY_SECONDS. */
  cardHolds: CardHoldPolicy;
}

/** The payments subgraph's per-request context. */
export interface PaymentsContext extends RequestBase {
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
  iouAccounts: DataLoader<string, IouAccountDocument | null>;
  merchants: DataLoader<string, MerchantDocument | null>;
  paymentLinks: DataLoader<string, PaymentLinkDocument | null>;
  accountBook: AccountBook;
  /** An aggregator's funds transactions, by id, reference or ARN. */
  funds: (svcAggregatorId: string, input: Parameters<typeof retrieveFunds>[2]) => ReturnType<typeof retrieveFunds>;
  ach: AchLedger;
  beneficiaryBook: Beneficiaries;
  ious: Ious;
  merchantBook: Merchants;
  links: PaymentLinks;
  refunds: Refunds;
  /** Webhook and email deliveries: resend, endpoint enabling. */
  deliveries: Deliveries;
  deliveryLoader: DataLoader<string, DeliveryDocument | null>;
  /** Webhook and email deliveries matching a filter, newest first, a page at a time. */
  deliveryLog: (
    filter: Filter<DeliveryDocument>,
    page: { numberOfRecords?: number | null; skipRecords?: number | null },
  ) => ReturnType<typeof readPage<DeliveryDocument>>;
}

export function createPaymentsContext(base: RequestBase, services: PaymentsServices): PaymentsContext {
  const { db, deliveries } = services;
  const accounts = accountsCollection(db);
  const transactions = transactionsCollection(db);
  const beneficiaries = beneficiariesCollection(db);
  const iouAccounts = iouAccountsCollection(db);
  return {
    ...base,
    accounts: loaderByKey(accounts),
    accountsOfUser: loaderOfGroups(accounts, 'SvcUserId', { sort: { _id: 1 } }),
    transactions: loaderByKey(transactions),
    transactionPages: transactionPagesLoader(transactions),
    beneficiaries: loaderByKey(beneficiaries),
    beneficiariesOfUser: loaderOfGroups(beneficiaries, 'SvcUserId', {
      sort: { isFavourite: -1, name: 1, _id: 1 },
      filter: { isDeleted: false },
    }),
    achPayments: loaderByKey(achPaymentsCollection(db)),
    iouAccountsOfLender: loaderOfGroups(iouAccounts, 'SvcUserId', { sort: { dtsModified: -1, _id: 1 } }),
    iouAccountsOfBorrower: loaderOfGroups(iouAccounts, 'otherSvcUserId', { sort: { dtsModified: -1, _id: 1 } }),
    iouTransactionsOfAccount: loaderOfGroups(iouTransactionsCollection(db), 'IOUAccountId', { sort: { dts: 1, _id: 1 } }),
    iouAccounts: loaderByKey(iouAccounts),
    merchants: loaderByKey(merchantsCollection(db)),
    paymentLinks: loaderByKey(paymentLinksCollection(db)),
    accountBook: new AccountBook(db, services.cardHolds),
    funds: (svcAggregatorId, input) => retrieveFunds(db, svcAggregatorId, input),
    ach: new AchLedger(db, base.logger, deliveries, services.allowInternalWebhooks),
    beneficiaryBook: new Beneficiaries(db),
    ious: new Ious(db, services.graph),
    merchantBook: new Merchants(db, services.links.jwtSecret, base.logger, services.allowInternalWebhooks, base.audit),
    links: new PaymentLinks(db, deliveries, services.links, base.logger, base.audit),
    refunds: new Refunds(db, services.allowInternalWebhooks),
    deliveries,
    deliveryLoader: loaderByKey(deliveriesCollection(db)),
    deliveryLog: (filter, page) => readPage(deliveriesCollection(db).find(filter).sort({ dtsCreated: -1, _id: -1 }), checkPage(page)),
  };
}
