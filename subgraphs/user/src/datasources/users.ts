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
export interface UserDocument {
  _id: string;
  SvcUserId: string;
  names: string[];
  firstName: string | null;
  middleName: string | null;
  lastName: string | null;
  sortId: string | null;
  languageCode: string | null;
  segment: string | null;
  referralCode: string | null;
  extras: { sex?: string | null; eyeColor?: string | null; hairColor?: string | null; heightMetric?: number | null; weightMetric?: number | null } | null;
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
