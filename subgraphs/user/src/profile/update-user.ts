import type { Collection } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { checkString, EMAIL_RULE, PHONE_RULE, type StringRule } from '../../../../platform/security/validate.js';
import type { AddressDocument, UserDocument } from './datasource.js';
import { findAddress, toAddressDocument, withOneMain, type AddressRequest } from './addresses.js';
import type { Confirmations } from './confirmation.js';
import { MAX_ADDRESSES, USER_LIST_CAPS } from '../list-caps.js';
import { checkListTotal } from '../../../../platform/graphql/list-caps.js';

/** `POST /user`'s body as the graph receives it. */
export interface UserUpdateRequest {
  dtsModified?: string | null;
  phoneNumber?: string | null;
  phoneNumbers?: string[] | null;
  mobile?: string | null;
  email?: string | null;
  emails?: string[] | null;
  newAddresses?: AddressRequest[] | null;
  deletedAddresses?: AddressRequest[] | null;
  addresses?: AddressRequest[] | null;
  firstName?: string | null;
  lastName?: string | null;
  languageCode?: string | null;
  isMetric?: boolean | null;
  postOnboardingStepsRequired?: string | null;
  faceImage?: string | null;
  homecurrency?: string | null;
}

const NAME: StringRule = { min: 1, max: 100, safeText: true };
function list(values: string[] | null | undefined, field: 'emails' | 'phoneNumbers', rule: StringRule): string[] | undefined {
  if (values === undefined || values === null) return undefined;
  const cap = USER_LIST_CAPS[`UserUpdateInput.${field}`];
  if (values.length > cap) throw appError(ErrorCode.VALIDATION_FAILED, `${field} may hold at most ${cap} items.`, { field });
  return values.map((value, i) => checkString(value, `${field}[${i}]`, rule)!);
}

/** Checks a whole update before anything is written, and turns it into the fields to set. */
function plan(
  user: UserDocument,
  input: UserUpdateRequest,
  now: Date,
): { set: Partial<UserDocument>; emailChanged: boolean; mobileChanged: boolean } {
  const set: Partial<UserDocument> = {};
  const nonNull = <K extends keyof UserUpdateRequest>(key: K) => {
    if (input[key] === null) throw appError(ErrorCode.VALIDATION_FAILED, `${key} may not be null.`, { field: key });
    return input[key];
  };
  if (input.dtsModified !== undefined) set.clientDtsModified = checkString(input.dtsModified, 'dtsModified', { max: 64 }) ?? null;
  if (input.phoneNumber !== undefined) set.phoneNumber = checkString(input.phoneNumber, 'phoneNumber', PHONE_RULE) ?? null;
  if (input.mobile !== undefined) set.mobile = checkString(input.mobile, 'mobile', PHONE_RULE) ?? null;
  if (input.email !== undefined) set.email = checkString(input.email, 'email', EMAIL_RULE) ?? null;
  const phoneNumbers = list(input.phoneNumbers, 'phoneNumbers', PHONE_RULE);
  if (phoneNumbers) set.phoneNumbers = phoneNumbers;
  const emails = list(input.emails, 'emails', EMAIL_RULE);
  if (emails) set.emails = emails;
  if (input.firstName !== undefined) set.firstName = checkString(nonNull('firstName'), 'firstName', NAME)!;
  if (input.lastName !== undefined) set.lastName = checkString(nonNull('lastName'), 'lastName', NAME)!;
  if (input.languageCode !== undefined) {
    set.languageCode = checkString(nonNull('languageCode'), 'languageCode', {
      pattern: /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/,
      patternText: 'a language code such as en or en-US',
    })!;
  }
  if (input.isMetric !== undefined) set.isMetric = nonNull('isMetric');
  if (input.postOnboardingStepsRequired !== undefined)
    set.postOnboardingStepsRequired = checkString(input.postOnboardingStepsRequired, 'postOnboardingStepsRequired', { max: 100 }) ?? null;
  if (input.faceImage !== undefined) set.faceImage = checkString(input.faceImage, 'faceImage', { max: 500 }) ?? null;
  if (input.homecurrency !== undefined)
    set.homecurrency = checkString(nonNull('homecurrency'), 'homecurrency', {
      pattern: /^[A-Z]{3}$/,
      patternText: 'an ISO 4217 currency code',
    })!;
  if (set.firstName !== undefined || set.lastName !== undefined) {
    const first = set.firstName ?? user.firstName;
    const last = set.lastName ?? user.lastName;
    set.names = [first, user.middleName, last].filter((n): n is string => Boolean(n));
  }

  if (input.addresses || input.newAddresses || input.deletedAddresses) {
    let addresses: AddressDocument[] = user.addresses;
    let preferredMain: string | undefined;
    if (input.addresses) {
      addresses = input.addresses.map((address, i) =>
        toAddressDocument(
          address,
          `addresses[${i}]`,
          user.SvcUserId,
          now,
          user.addresses.find((a) => a._id === address.SvcUserAddressId),
        ),
      );
    }
    (input.newAddresses ?? []).forEach((address, i) => {
      const stored = toAddressDocument(address, `newAddresses[${i}]`, user.SvcUserId, now);
      if (stored.isMain) preferredMain = stored._id;
      addresses = [...addresses, stored];
    });
    (input.deletedAddresses ?? []).forEach((address, i) => {
      const field = `deletedAddresses[${i}]`;
      if (!address.SvcUserAddressId) toAddressDocument(address, field, user.SvcUserId, now);
      const found = findAddress(addresses, address);
      if (!found) throw appError(ErrorCode.VALIDATION_FAILED, `${field} matches no address of the user.`, { field });
      addresses = addresses.filter((a) => a._id !== found._id);
    });
    // The stored list is bounded, not only each request's: a user already past the cap (stored
    // before it existed) may still delete or replace, but not grow it.
    if (addresses.length > MAX_ADDRESSES && addresses.length > user.addresses.length) {
      checkListTotal(addresses.length, MAX_ADDRESSES, input.newAddresses?.length ? 'newAddresses' : 'addresses', "A user's addresses");
    }
    set.addresses = withOneMain(addresses, preferredMain);
  }
  // A changed value needs confirming; so does the same value sent again while still unconfirmed
  // (a code that never arrived is sent anew).
  const emailChanged = set.email !== undefined && set.email !== null && (set.email !== user.email || !user.isEmailConfirmed);
  const mobileChanged = set.mobile !== undefined && set.mobile !== null && (set.mobile !== user.mobile || !user.isMobilePhoneConfirmed);
  if (set.email !== undefined && set.email !== user.email) set.isEmailConfirmed = false;
  if (set.mobile !== undefined && set.mobile !== user.mobile) set.isMobilePhoneConfirmed = false;
  return { set, emailChanged, mobileChanged };
}

/** Applies `POST /user` to the user of the token. */
export class UserUpdater {
  constructor(
    private readonly users: Collection<UserDocument>,
    private readonly confirmations: Confirmations,
    private readonly logger: Logger,
  ) {}

  async update(SvcUserId: string, input: UserUpdateRequest): Promise<UserDocument> {
    // Optimistic concurrency: the write is conditional on the version that was read, so two
    // racing updates cannot lose each other's address changes; the loser re-reads and re-applies.
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const user = await this.users.findOne({ _id: SvcUserId });
      if (!user) throw appError(ErrorCode.NOT_FOUND, 'The user of this session no longer exists.');
      const now = new Date(Math.max(Date.now(), user.dtsModified.getTime() + 1));
      const { set, emailChanged, mobileChanged } = plan(user, input, now);
      if (emailChanged) await this.confirmations.assertMaySend(SvcUserId, 'email');
      if (mobileChanged) await this.confirmations.assertMaySend(SvcUserId, 'mobile');
      const updated = await this.users.findOneAndUpdate(
        { _id: SvcUserId, dtsModified: user.dtsModified },
        { $set: { ...set, dtsModified: now } },
        { returnDocument: 'after' },
      );
      if (!updated) continue;
      if (emailChanged && updated.email) await this.confirmations.issue(SvcUserId, 'email', updated.email);
      if (mobileChanged && updated.mobile) await this.confirmations.issue(SvcUserId, 'mobile', updated.mobile);
      this.logger.info('user updated', { SvcUserId, fields: Object.keys(set) });
      return updated;
    }
    throw appError(ErrorCode.CONFLICT, 'The user is being changed by another request; try again.');
  }
}
