import { scalarResolvers } from '../../../../platform/graphql/scalars.js';
import type { Resolvers } from '../__generated__/resolvers-types.js';
import { Account } from './Account.js';
import { AchPayment } from './AchPayment.js';
import { Beneficiary } from './Beneficiary.js';
import { Delivery } from './Delivery.js';
import { FundsTransaction } from './FundsTransaction.js';
import { IouAccount, IouTransaction } from './IouAccount.js';
import { Mutation } from './Mutation.js';
import { Merchant, PaymentLink, RefundTransaction, Undo } from './PaymentLink.js';
import { Query } from './Query.js';
import { Transaction } from './Transaction.js';
import { User } from './User.js';

export const resolvers: Resolvers = {
  DateTime: scalarResolvers.DateTime,
  CurrencyCode: scalarResolvers.CurrencyCode,
  Decimal: scalarResolvers.Decimal,
  JSONObject: scalarResolvers.JSONObject,
  Query,
  Mutation,
  IouAccount,
  IouTransaction,
  PaymentLink,
  Merchant,
  RefundTransaction,
  Undo,
  Delivery,
  Account,
  AchPayment,
  Transaction,
  Beneficiary,
  FundsTransaction,
  User,
};
