import type { Db } from 'mongodb';
import { inEvaluationOrder } from '../../../../platform/domain/restrictions.js';
import {
  proceduralRestrictionsCollection,
  restrictionsCollection,
  transactionTypesCollection,
  type ProceduralRestrictionDocument,
  type RestrictionDocument,
  type TransactionTypeDocument,
} from './datasource.js';

/** One user's own rules, as Query.restrictionRules exports them (UserRestrictionRules). */
export interface UserRulesView {
  SvcUserId: string;
  /** In evaluation order. */
  restrictions: RestrictionDocument[];
  /** Oldest first. */
  procedural: ProceduralRestrictionDocument[];
}

/** Every rule a read model needs to decide as evaluateTransaction does (RestrictionRules). */
export interface RestrictionRulesView {
  transactionTypes: TransactionTypeDocument[];
  /** In evaluation order. */
  defaults: RestrictionDocument[];
  users: UserRulesView[];
}

/**
 * Reads the rules in three queries whatever the number of users: the transaction types, the
 * restrictions (defaults and users') and the procedural restrictions. With `SvcUserIds`, one
 * entry per distinct id, in the order asked, empty for a user with no rules of their own (so that a
 * read model that refetches after an event drops what was removed); without, every user who has
 * rules of their own, by SvcUserId.
 */
export async function readRestrictionRules(db: Db, SvcUserIds: readonly string[] | null): Promise<RestrictionRulesView> {
  const restrictions = restrictionsCollection(db);
  const ofUsers = SvcUserIds ? { SvcUserId: { $in: [...SvcUserIds] } } : {};
  const [transactionTypes, stored, procedural] = await Promise.all([
    transactionTypesCollection(db).find({}).sort({ _id: 1 }).toArray(),
    // Without ids every restriction is read once, defaults and users' alike, and parted below.
    SvcUserIds ? restrictions.find({ $or: [{ SvcUserId: null }, ofUsers] }).toArray() : restrictions.find({}).toArray(),
    proceduralRestrictionsCollection(db).find(ofUsers).sort({ dtsCreated: 1, _id: 1 }).toArray(),
  ]);
  const users = new Map<string, UserRulesView>();
  const entry = (SvcUserId: string) => {
    let user = users.get(SvcUserId);
    if (!user) users.set(SvcUserId, (user = { SvcUserId, restrictions: [], procedural: [] }));
    return user;
  };
  for (const SvcUserId of SvcUserIds ?? []) entry(SvcUserId);
  const defaults: RestrictionDocument[] = [];
  for (const restriction of stored) {
    // A document written by hand may lack SvcUserId: a default, as the evaluation reads it.
    const SvcUserId = restriction.SvcUserId ?? null;
    if (SvcUserId === null) defaults.push(restriction);
    else entry(SvcUserId).restrictions.push(restriction);
  }
  for (const placed of procedural) entry(placed.SvcUserId).procedural.push(placed);
  for (const user of users.values()) user.restrictions = inEvaluationOrder(user.restrictions);
  return {
    transactionTypes,
    defaults: inEvaluationOrder(defaults),
    users: SvcUserIds
      ? [...users.values()]
      : [...users.values()].sort((a, b) => (a.SvcUserId < b.SvcUserId ? -1 : a.SvcUserId > b.SvcUserId ? 1 : 0)),
  };
}
