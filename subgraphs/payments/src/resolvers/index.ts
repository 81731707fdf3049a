import { scalarResolvers } from '../../../../platform/scalars.js';
import type { Resolvers } from '../__generated__/resolvers-types.js';
import { Account } from './Account.js';
import { Beneficiary } from './Beneficiary.js';
import { Transaction } from './Transaction.js';
import { User } from './User.js';

export const resolvers: Resolvers = {
  DateTime: scalarResolvers.DateTime,
  JSONObject: scalarResolvers.JSONObject,
  Account,
  Transaction,
  Beneficiary,
  User,
};
