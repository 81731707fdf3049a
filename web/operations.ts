/**
 * Every GraphQL document the dashboard sends, in one place: the page imports them, and the
 * gateway registers them as trusted documents (so the dashboard works where only registered
 * operations may run). The text is hashed as it is: change it here, nowhere else.
 */
/** The authorizations' summary and rows both roles' dashboards open with. */
const AUTHORIZATION_FRAGMENTS = /* GraphQL */ `
  fragment AuthorizationSummary on CardAuthorizationSummary {
    asOf
    approved
    declined
    declineReasons {
      responseCode
      decidedBy
      reason
      count
    }
  }
  fragment RecentAuthorization on CardAuthorization {
    messageId
    messageType
    approved
    responseCode
    decidedBy
    reason
    amount
    currency
    dtsReceived
    SvcCardId
  }
`;

export const DASHBOARD_DOCUMENTS = {
  aggregatorLogin: /* GraphQL */ 'mutation ($input: AggregatorLoginInput!) { aggregatorGetToken(input: $input) { token } }',
  userLogin: /* GraphQL */ 'mutation ($input: LoginInput!) { login(input: $input) { token } }',
  aggregatorState: /* GraphQL */ `
    query AggregatorDashboard($since: DateTime!) {
      cardAuthorizationSummary(since: $since) {
        ...AuthorizationSummary
      }
      cardAuthorizationsConnection(since: $since, first: 25) {
        edges {
          node {
            ...RecentAuthorization
          }
        }
      }
      paymentLinkStatusCounts {
        asOf
        statuses {
          status
          count
        }
      }
      achReturnRatesConnection(first: 1) {
        edges {
          node {
            returnRates {
              maxDate
              unAuthorizedRate
              unAuthorizedDaysOver
              adminRate
              adminDaysOver
              totalRate
              totalDaysOver
            }
          }
        }
      }
      failedDeliveries: deliveries(status: failed, numberOfRecords: 20) {
        items {
          deliveryId
          kind
          eventType
          to
          status
          lastError
          svcMerchantId
        }
      }
      pausedDeliveries: deliveries(status: paused, numberOfRecords: 20) {
        items {
          deliveryId
          kind
          eventType
          to
          status
          lastError
          svcMerchantId
        }
      }
      failedAdvices: cardWebhookDeliveries(status: failed, numberOfRecords: 20) {
        items {
          deliveryId
          eventType
          to
          status
          lastError
        }
      }
      pausedAdvices: cardWebhookDeliveries(status: paused, numberOfRecords: 20) {
        items {
          deliveryId
          eventType
          to
          status
          lastError
        }
      }
      merchants {
        svcMerchantId
        name
        dtsWebhookDisabled
      }
    }
    ${AUTHORIZATION_FRAGMENTS}
  `,
  aggregatorAchReport: /* GraphQL */ `
    query AggregatorAchReport {
      achReturnRatesConnection(first: 1) {
        edges {
          node {
            returnRates {
              maxDate
              unAuthorizedRate
              unAuthorizedDaysOver
              adminRate
              adminDaysOver
              totalRate
              totalDaysOver
            }
          }
        }
      }
    }
  `,
  userState: /* GraphQL */ `
    query UserDashboard($since: DateTime!) {
      me {
        cards {
          SvcCardId
          SvcAccountId
          name
          lastFour
          status
        }
        accounts {
          SvcAccountId
          name
          balance
          availableBalance
          currency
          transactions(first: 10) {
            edges {
              node {
                transactionId
                SvcCardId
                narrative
                amount
                currency
                credit
                debit
                dtsValue
                isPending
              }
            }
          }
        }
      }
      cardAuthorizationSummary(since: $since) {
        ...AuthorizationSummary
      }
      cardAuthorizationsConnection(since: $since, first: 25) {
        edges {
          node {
            ...RecentAuthorization
            card {
              name
              lastFour
            }
          }
        }
      }
    }
    ${AUTHORIZATION_FRAGMENTS}
  `,
  userAccounts: /* GraphQL */ `
    query UserDashboardAccounts {
      me {
        accounts {
          SvcAccountId
          name
          balance
          availableBalance
          currency
          transactions(first: 10) {
            edges {
              node {
                transactionId
                SvcCardId
                narrative
                amount
                currency
                credit
                debit
                dtsValue
                isPending
              }
            }
          }
        }
      }
    }
  `,
  userCardAuthorizations:
    /* GraphQL */ 'subscription { cardAuthorizations { messageId messageType approved responseCode decidedBy reason amount currency dtsReceived SvcCardId card { name lastFour account { SvcAccountId balance availableBalance } } } }',
  userCardStatusChanged: /* GraphQL */ 'subscription { cardStatusChanged { SvcCardId name lastFour status } }',
  aggregatorCardAuthorizations:
    /* GraphQL */ 'subscription { cardAuthorizations { messageId messageType approved responseCode decidedBy reason amount currency dtsReceived SvcCardId } }',
  paymentLinkStatusChanged:
    /* GraphQL */ 'subscription { paymentLinkStatusChanged { svcTransactionId status amount currency payerName merchant { name } statusChangeHistory { status dtsCreatedAt } } }',
  achPaymentUpdated: /* GraphQL */ 'subscription { achPaymentUpdated { svcTransactionId status returnCode amount } }',
  kycApplicationCompleted: /* GraphQL */ 'subscription { kycApplicationCompleted { applicationId customerId outcome } }',
  webhookDeliveryAttempted:
    /* GraphQL */ 'subscription { webhookDeliveryAttempted { deliveryId kind eventType to status lastError svcMerchantId attempts { number outcome httpStatus } } }',
} as const;
