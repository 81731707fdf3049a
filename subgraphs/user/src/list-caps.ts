import type { ListCaps } from '../../../platform/graphql/list-caps.js';

/** The most addresses a user keeps: `POST /user` refuses a change that would store more. */
export const MAX_ADDRESSES = 10;

/** The most items of each list the user subgraph takes from clients (see platform/graphql/list-caps.ts). */
export const USER_LIST_CAPS = {
  'UserUpdateInput.emails': 10,
  'UserUpdateInput.phoneNumbers': 10,
  'UserUpdateInput.newAddresses': MAX_ADDRESSES,
  'UserUpdateInput.deletedAddresses': MAX_ADDRESSES,
  'UserUpdateInput.addresses': MAX_ADDRESSES,
  // The catalogue has seven alert types; a device sends its whole list.
  'Mutation.syncAlerts(alerts:)': 20,
} as const satisfies ListCaps;
