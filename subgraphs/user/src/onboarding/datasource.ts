import type { Db } from 'mongodb';
import type { Segment } from '../profile/datasource.js';

/** Someone onboarding on a device. `_id` is the prospectId. */
export interface ProspectDocument {
  _id: string;
  deviceTag: string;
  preSegment: string;
  segment: Segment;
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  mobile: string | null;
  languageCode: string | null;
  data: Record<string, unknown> | null;
  status: 'open' | 'converting' | 'registered';
  SvcUserId: string | null;
  dtsCreated: Date;
  dtsModified: Date;
}

/** A pending recovery code for registering `deviceTag` to an existing user. `_id` is `<SvcUserId>:<deviceTag>`. */
export interface RecoveryCodeDocument {
  _id: string;
  SvcUserId: string;
  deviceTag: string;
  codeHash: string;
  attempts: number;
  dtsExpiry: Date;
}

/** A task for the rewards team: pay the referrer once the referred user is registered. */
export interface ReferralTaskDocument {
  _id: string;
  referrerSvcUserId: string;
  referralCode: string;
  referredSvcUserId: string;
  status: 'pending';
  dtsCreated: Date;
}

export interface OnboardingSocketDocument {
  _id: string;
  prospectId: string;
  deviceTag: string;
  socketId: string;
  dtsCreated: Date;
  dtsExpiry: Date;
}

/** The onboarding collections: prospects, recovery codes, referral tasks and onboarding sockets. */
export function prospectCollections(db: Db) {
  return {
    prospects: db.collection<ProspectDocument>('prospects'),
    recoveryCodes: db.collection<RecoveryCodeDocument>('recoveryCodes'),
    referralTasks: db.collection<ReferralTaskDocument>('referralTasks'),
    onboardingSockets: db.collection<OnboardingSocketDocument>('onboardingSockets'),
  };
}

/** The indexes of every query on these collections. */
export async function createOnboardingIndexes(db: Db): Promise<void> {
  await prospectCollections(db).prospects.createIndex({ deviceTag: 1 });
}
