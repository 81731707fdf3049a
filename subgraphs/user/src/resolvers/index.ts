import { scalarResolvers } from '../../../../platform/graphql/scalars.js';
import type { Resolvers } from '../__generated__/resolvers-types.js';
import { Address } from './Address.js';
import { Mutation } from './Mutation.js';
import { Node, node } from './Node.js';
import { Query } from './Query.js';
import { User } from './User.js';

export const resolvers: Resolvers = {
  DateTime: scalarResolvers.DateTime,
  CurrencyCode: scalarResolvers.CurrencyCode,
  JSONObject: scalarResolvers.JSONObject,
  AnyJSONObject: scalarResolvers.AnyJSONObject,
  Query: { ...Query, node },
  Node,
  Mutation,
  User,
  Address,
};
