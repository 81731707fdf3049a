import type { Collection, Db } from 'mongodb';
import type {
  ProceduralRestrictionDocument,
  RestrictionDocument,
  TransactionTypeDocument,
} from '../../../../platform/domain/restrictions.js';

export type { ProceduralRestrictionDocument, RestrictionDocument, TransactionTypeDocument };

export function restrictionsCollection(db: Db): Collection<RestrictionDocument> {
  return db.collection<RestrictionDocument>('restrictions');
}

export function transactionTypesCollection(db: Db): Collection<TransactionTypeDocument> {
  return db.collection<TransactionTypeDocument>('transactionTypes');
}

export function proceduralRestrictionsCollection(db: Db): Collection<ProceduralRestrictionDocument> {
  return db.collection<ProceduralRestrictionDocument>('proceduralRestrictions');
}

/** The indexes of every query on these collections: a user's restrictions and procedural restrictions. */
export async function createRestrictionIndexes(db: Db): Promise<void> {
  await restrictionsCollection(db).createIndex({ SvcUserId: 1 });
  await proceduralRestrictionsCollection(db).createIndex({ SvcUserId: 1 });
}
