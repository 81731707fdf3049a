/**
 * Every GraphQL document the dashboard sends, in one place: the page imports them, and the
 * gateway registers them as trusted documents (so the dashboard works where only registered
 * operations may run). The text is hashed as it is: change it here, nowhere else.
 */
export const DASHBOARD_DOCUMENTS = {
  aggregatorLogin: /* GraphQL */ 'mutation ($input: AggregatorLoginInput!) { aggregatorGetToken(input: $input) { token } }',
  userLogin: /* GraphQL */ 'mutation ($input: LoginInput!) { login(input: $input) { token } }',
  userCardAuthorizations:
    /* GraphQL */ 'subscription { cardAuthorizations { messageId messageType approved responseCode amount currency reason card { name lastFour } } }',
  userCardStatusChanged: /* GraphQL */ 'subscription { cardStatusChanged { SvcCardId name lastFour status } }',
  aggregatorCardAuthorizations:
    /* GraphQL */ 'subscription { cardAuthorizations { messageId messageType approved responseCode amount currency reason } }',
  paymentLinkStatusChanged:
    /* GraphQL */ 'subscription { paymentLinkStatusChanged { svcTransactionId status amount currency payerName merchant { name } } }',
  achPaymentUpdated: /* GraphQL */ 'subscription { achPaymentUpdated { svcTransactionId status returnCode amount } }',
  kycApplicationCompleted: /* GraphQL */ 'subscription { kycApplicationCompleted { applicationId customerId outcome } }',
  webhookDeliveryAttempted:
    /* GraphQL */ 'subscription { webhookDeliveryAttempted { deliveryId eventType status attempts { number outcome httpStatus } } }',
} as const;
