import { parseGlobalId } from '../../../../platform/graphql/global-id.js';
import { maySeeUser } from '../../../../platform/security/authorize.js';
import type { NodeResolvers, QueryResolvers } from '../__generated__/resolvers-types.js';

/** The types other subgraphs own that a global id may name; this one answers User. */
const REFERENCED = [
  'Card',
  'CardAuthorization',
  'Account',
  'Transaction',
  'Beneficiary',
  'IouAccount',
  'Merchant',
  'PaymentLink',
  'AchPayment',
  'Delivery',
  'Restriction',
  'Application',
] as const;
const isReferenced = (type: string): type is (typeof REFERENCED)[number] => (REFERENCED as readonly string[]).includes(type);

/**
 * `node(id:)`: a User is read here, under its access rule; any other type is handed to the
 * gateway as a reference by its id, which the type's own subgraph resolves (null when the record
 * does not exist or the caller may not see it). An id that names no type is null.
 */
export const node: NonNullable<QueryResolvers['node']> = async (_parent, { id }, { principal, users }) => {
  const parsed = parseGlobalId(id);
  if (!parsed) return null;
  const { type, key } = parsed;
  if (isReferenced(type)) return { __typename: type, id };
  if (type !== 'User' || !maySeeUser(principal, key)) return null;
  return users.load(key);
};

export const Node: NodeResolvers = {
  // A reference carries its type; a stored user does not.
  __resolveType: (record) => ('__typename' in record && typeof record.__typename === 'string' ? record.__typename : 'User'),
};
