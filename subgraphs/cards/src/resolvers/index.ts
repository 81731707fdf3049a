import { scalarResolvers } from '../../../../platform/graphql/scalars.js';
import type { Resolvers } from '../__generated__/resolvers-types.js';
import { Card } from './Card.js';
import { CardAuthorization } from './CardAuthorization.js';
import { CardWebhookDelivery } from './CardWebhookDelivery.js';
import { Mutation } from './Mutation.js';
import { Query } from './Query.js';
import { User } from './User.js';

export const resolvers: Resolvers = {
  DateTime: scalarResolvers.DateTime,
  CurrencyCode: scalarResolvers.CurrencyCode,
  Decimal: scalarResolvers.Decimal,
  JSONObject: scalarResolvers.JSONObject,
  Query,
  Mutation,
  Card,
  CardAuthorization,
  CardWebhookDelivery,
  User,
};
