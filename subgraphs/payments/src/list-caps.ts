import type { ListCaps } from '../../../platform/graphql/list-caps.js';
import { CARD_HOLD_RELEASE_LIMIT } from './accounts/card-holds.js';
import { CARD_TRANSACTION_BATCH_LIMIT } from './accounts/card-transactions.js';

/** The most items of each list the payments subgraph takes from clients (see platform/graphql/list-caps.ts). */
export const PAYMENTS_LIST_CAPS = {
  'RefundFilter.svcMerchantIds': 1000,
  'RefundFilter.svcTransactionIds': 1000,
  'PaymentLinkInput.availablePaymentType': 2,
  'PaymentLinkInput.fields': 10,
  'TransactionChangesInput.labels': 20,
  'Mutation.recordCardTransactions(input:)': CARD_TRANSACTION_BATCH_LIMIT,
  'Mutation.releaseCardHolds(input:)': CARD_HOLD_RELEASE_LIMIT,
} as const satisfies ListCaps;
