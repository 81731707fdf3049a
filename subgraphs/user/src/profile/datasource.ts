import type { Collection, Db } from 'mongodb';

/** A stored postal address, embedded in its user. */
export interface AddressDocument {
  _id: string;
  SvcUserAddressId: string;
  SvcUserId: string;
  addressLine1: string;
  addressLine2: string | null;
  city: string;
  state: string;
  postalCode: string;
  countryCode: string;
  isMain: boolean;
  dtsRecorded: Date;
  dtsModified: Date;
}

/** A stored end user: the spec's User record. Credentials live in their own collections. */
/** The customer segments a user may be in (the schema's Segment). */
export const SEGMENTS = ['retail', 'student', 'premium', 'smallBusiness'] as const;
export type Segment = (typeof SEGMENTS)[number];

export interface UserDocument {
  _id: string;
  SvcUserId: string;
  names: string[];
  firstName: string | null;
  middleName: string | null;
  lastName: string | null;
  sortId: string | null;
  languageCode: string | null;
  segment: Segment | null;
  referralCode: string | null;
  extras: {
    sex?: string | null;
    eyeColor?: string | null;
    hairColor?: string | null;
    heightMetric?: number | null;
    weightMetric?: number | null;
  } | null;
  private: boolean;
  isFullyRegistered: boolean;
  isIdleUser: boolean;
  isActive: boolean;
  isMetric: boolean;
  isEmailConfirmed: boolean;
  isMobilePhoneConfirmed: boolean;
  uiStage: string | null;
  dosDob: string | null;
  addresses: AddressDocument[];
  mobile: string | null;
  phoneNumber: string | null;
  email: string | null;
  homecurrency: string | null;
  postOnboardingStepsRequired: string | null;
  faceImage: string | null;
  mainSvcAccountId: string | null;
  phoneNumbers: string[];
  emails: string[];
  /** The client's own "last modified" text from `POST /user`, kept as sent. */
  clientDtsModified: string | null;
  /** A hardened user cannot be recovered onto a new device; an operator must help. */
  isHardened: boolean;
  dtsCreated: Date;
  dtsCreatedAtUsers: Date;
  dtsModified: Date;
  dtsRegistered: Date | null;
}

export function usersCollection(db: Db): Collection<UserDocument> {
  return db.collection<UserDocument>('users');
}

/** The indexes of every query on this collection: users by referral code. */
export async function createUserIndexes(db: Db): Promise<void> {
  await usersCollection(db).createIndex({ referralCode: 1 });
}

/** A pending confirmation code of a user's email or mobile. `_id` is `<SvcUserId>:<kind>`. */
export interface ConfirmationDocument {
  _id: string;
  SvcUserId: string;
  kind: 'email' | 'mobile';
  /** The address or number the code was sent to. */
  target: string;
  codeHash: string;
  attempts: number;
  dtsExpiry: Date;
  /** When codes of this kind were sent in the last hour, to limit re-sending. */
  dtsIssued: Date[];
}

export function confirmationsCollection(db: Db): Collection<ConfirmationDocument> {
  return db.collection<ConfirmationDocument>('confirmations');
}
