/**
 * Every GraphQL document the dashboard sends, in one place: the page imports them, and the
 * gateway registers them as trusted documents (so the dashboard works where only registered
 * operations may run). The text is hashed as it is: change it here, nowhere else.
 */
export const DASHBOARD_DOCUMENTS = {
  aggregatorLogin: 'mutation ($input: AggregatorLoginInput!) { aggregatorGetToken(input: $input) { token } }',
  userLogin: 'mutation ($input: LoginInput!) { login(input: $input) { token } }',
  userCardAuthorizations: 'subscription { cardAuthorizations { messageId messageType approved responseCode amount currency reason card { name lastFour } } }',
  userCardStatusChanged: 'subscription { cardStatusChanged { SvcCardId name lastFour status } }',
  aggregatorCardAuthorizations: 'subscription { cardAuthorizations { messageId messageType approved responseCode amount currency reason } }',
  paymentLinkStatusChanged: 'subscription { paymentLinkStatusChanged { svcTransactionId status amount currency payerName merchant { name } } }',
  achPaymentUpdated: 'subscription { achPaymentUpdated { svcTransactionId status returnCode amount } }',
  kycApplicationCompleted: 'subscription { kycApplicationCompleted { applicationId customerId outcome } }',
  webhookDeliveryAttempted: 'subscription { webhookDeliveryAttempted { deliveryId eventType status attempts { number outcome httpStatus } } }',
} as const;
