import { globalId } from '../../../../platform/graphql/global-id.js';
import type { AddressResolvers } from '../__generated__/resolvers-types.js';

export const Address: AddressResolvers = {
  id: (address) => globalId('Address', address.SvcUserAddressId),
};
