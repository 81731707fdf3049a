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

/**
 * A task for the rewards team: pay the referrer. Written once the referred user has confirmed an
 * email and a mobile number, at most once per referred person (see onboarding/referrals.ts).
 */
export interface ReferralTaskDocument {
  _id: string;
  referrerSvcUserId: string;
  referralCode: string;
  referredSvcUserId: string;
  status: 'pending';
  dtsCreated: Date;
}

/** A registration's referral code, waiting for the referred user's confirmations. `_id` is the referred SvcUserId. */
export interface ReferralClaimDocument {
  _id: string;
  referrerSvcUserId: string;
  referralCode: string;
  /** The registration device (see `deviceKeyOf`). */
  deviceKey: string;
  dtsCreated: Date;
}

/** A mailbox, mobile line or device that a referral bonus was paid for. `_id` is `mailbox:…`, `line:…` or `device:…`. */
export interface ReferralKeyDocument {
  _id: string;
  referredSvcUserId: string;
  dtsClaimed: Date;
}

export interface OnboardingSocketDocument {
  _id: string;
  prospectId: string;
  deviceTag: string;
  socketId: string;
  dtsCreated: Date;
  dtsExpiry: Date;
}

/** The onboarding collections: prospects, recovery codes, referral claims, keys and tasks, and onboarding sockets. */
export function prospectCollections(db: Db) {
  return {
    prospects: db.collection<ProspectDocument>('prospects'),
    recoveryCodes: db.collection<RecoveryCodeDocument>('recoveryCodes'),
    referralTasks: db.collection<ReferralTaskDocument>('referralTasks'),
    referralClaims: db.collection<ReferralClaimDocument>('referralClaims'),
    referralKeys: db.collection<ReferralKeyDocument>('referralKeys'),
    onboardingSockets: db.collection<OnboardingSocketDocument>('onboardingSockets'),
  };
}

/** The indexes of every query on these collections. */
export async function createOnboardingIndexes(db: Db): Promise<void> {
  const { prospects, referralKeys } = prospectCollections(db);
  await prospects.createIndex({ deviceTag: 1 });
  await referralKeys.createIndex({ referredSvcUserId: 1 });
}
