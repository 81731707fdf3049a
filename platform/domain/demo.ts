/**
 * The ids of the demo data that more than one subgraph seeds. Each subgraph seeds only its
 * own database; these shared ids are how the demo records refer to each other.
 */
export const DEMO = {
  userId: 'demo_user_1',
  userName: 'demo.user',
  password: 'Demo#Pass2026',
  testDeviceTag: 'demo-device-1',
  /** Demo devices of each device channel; their secret is published for trying the channels, demo only. */
  deviceSecret: 'demo-device-secret-for-trying-the-channels-only',
  devices: {
    android: { deviceTag: 'demo-android-1', uuid: '3f1c2a4e-6b7d-4e8f-9a0b-1c2d3e4f5a6b' },
    android_v1: { deviceTag: 'demo-android-v1-1' },
    ios_v1: { deviceTag: 'demo-ios-1' },
    mobile: { deviceTag: 'demo-mobile-1' },
    browser: { deviceTag: 'demo-browser-1', deviceId: 'demo-browser-device-id-for-trying-the-browser-channel' },
  },
  chat: { transport: 'whatsapp', transportUserId: '12125550100' },
  accountId: 'demo_account_1',
  /** A second demo user, with no login: the other party of the demo user's IOU. */
  friendUserId: 'demo_user_2',
  /** The demo aggregator's merchant; its webhook secret is published, demo only. */
  merchantId: 'demo_merchant',
  merchantWebhookSecret: 'whsec_ZGVtby1tZXJjaGFudC13ZWJob29rLXNlY3JldC1kZW1vLW9ubHk=',
  /** The code of the demo merchant's Sent payment link (exchange it at POST /public/customer/payment/link). */
  sentLinkCode: 'demo-sent-link-code-for-trying-the-customer-side',
  cardIds: ['demo_card_1', 'demo_card_2'],
  /** The demo aggregator's card-authorization webhook: `npm run webhook-receiver` listens there. Published secret: demo only. */
  webhook: {
    url: 'http://127.0.0.1:9000/webhooks',
    secret: 'whsec_ZGVtby13ZWJob29rLXNlY3JldC1mb3ItdGhlLXNhbmRib3g=',
    defaultStrategy: 'decline' as const,
    timeoutMs: 2000,
  },
  /** The demo aggregator's sandbox test card. */
  testCardId: 'demo_test_card',
  aggregatorId: 'demo_aggregator_org',
  aggregatorLogin: 'demo_aggregator',
  aggregatorPassword: 'Demo#Pass2026',
  /** 90 days of the demo aggregator's ACH debits and returns, with a stretch of unauthorized returns that goes out of compliance. */
  achHistory: { days: 90, perDay: 30, seed: 2026, spike: { fromDay: 40, toDay: 49, unauthorizedRate: 0.04 } },
} as const;
