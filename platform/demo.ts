/**
 * The ids of the demo data that more than one subgraph seeds. Each subgraph seeds only its
 * own database; these shared ids are how the demo records refer to each other.
 */
export const DEMO = {
  userId: 'demo_user_1',
  userName: 'demo.user',
  password: 'Demo#Pass2026',
  testDeviceTag: 'demo-device-1',
  accountId: 'demo_account_1',
  cardIds: ['demo_card_1', 'demo_card_2'],
  aggregatorId: 'demo_aggregator_org',
  aggregatorLogin: 'demo_aggregator',
  aggregatorPassword: 'Demo#Pass2026',
} as const;
