import { scalarResolvers } from '../../../../platform/scalars.js';
import type { Resolvers } from '../__generated__/resolvers-types.js';
import { Account } from './Account.js';
import { AchPayment } from './AchPayment.js';
import { Beneficiary } from './Beneficiary.js';
import { Mutation } from './Mutation.js';
import { Transaction } from './Transaction.js';
import { User } from './User.js';

export const resolvers: Resolvers = {
  DateTime: scalarResolvers.DateTime,
  JSONObject: scalarResolvers.JSONObject,
  Mutation,
  Account,
  AchPayment,
  Transaction,
  Beneficiary,
  User,
};
