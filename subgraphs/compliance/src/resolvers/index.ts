import { scalarResolvers } from '../../../../platform/graphql/scalars.js';
import type { Resolvers } from '../__generated__/resolvers-types.js';
import { AchReturnRates } from './AchReturnRates.js';
import { Application, GeneratedDocument, UploadedDocument } from './Application.js';
import { AuditRecord } from './AuditRecord.js';
import { Mutation } from './Mutation.js';
import { ProceduralRestriction, UserRestrictionRules } from './ProceduralRestriction.js';
import { Query } from './Query.js';
import { Restriction } from './Restriction.js';
import { User } from './User.js';

export const resolvers: Resolvers = {
  DateTime: scalarResolvers.DateTime,
  CurrencyCode: scalarResolvers.CurrencyCode,
  Decimal: scalarResolvers.Decimal,
  Date: scalarResolvers.Date,
  JSONObject: scalarResolvers.JSONObject,
  Query,
  Mutation,
  Restriction,
  ProceduralRestriction,
  UserRestrictionRules,
  AchReturnRates,
  Application,
  GeneratedDocument,
  UploadedDocument,
  AuditRecord,
  User,
};
