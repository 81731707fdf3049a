import type { AuditRecordResolvers } from '../__generated__/resolvers-types.js';

export const AuditRecord: AuditRecordResolvers = {
  id: (record) => record._id,
  details: (record) => Object.entries(record.details).map(([name, value]) => ({ name, value: value === null ? null : String(value) })),
};
