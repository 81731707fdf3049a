import countries from 'i18n-iso-countries';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, required } from '../../../../platform/security/validate.js';
import type { AddressDocument } from './datasource.js';

/** An address as a request carries it; every field unchecked. */
export interface AddressRequest {
  SvcUserAddressId?: string | null;
  addressLine1?: string | null;
  addressLine2?: string | null;
  city?: string | null;
  state?: string | null;
  postalCode?: string | null;
  countryCode?: string | null;
  country?: string | null;
  accountType?: string | null;
  isMain?: boolean | null;
}

const ACCOUNT_TYPES = ['checking', 'savings', 'debitCard'] as const;

/**
 * The country code an address stores, by the Address table's rule: ISO 3166-1 alpha-3 for
 * checking/savings accounts, alpha-2 for debit cards. `country` may be either form and is
 * converted; `countryCode` must already be the required form. Without an account type either
 * valid form is kept as given.
 */
function addressCountryCode(address: AddressRequest, field: string): string {
  const accountType = checkString(address.accountType, `${field}.accountType`, {});
  if (accountType && !(ACCOUNT_TYPES as readonly string[]).includes(accountType)) {
    throw appError(ErrorCode.VALIDATION_FAILED, `${field}.accountType must be one of ${ACCOUNT_TYPES.join(', ')}.`, {
      field: `${field}.accountType`,
    });
  }
  const wants = accountType === 'debitCard' ? 2 : accountType ? 3 : null;
  const code = address.countryCode ?? null;
  if (code !== null) {
    // isValid also accepts numeric codes (840): only letters are a countryCode here.
    const valid =
      (/^[A-Z]{2}$/.test(code) && countries.isValid(code) && wants !== 3) ||
      (/^[A-Z]{3}$/.test(code) && countries.isValid(code) && wants !== 2);
    if (!valid) {
      const form =
        wants === 2
          ? 'an ISO 3166-1 alpha-2 code (debit cards)'
          : wants === 3
            ? 'an ISO 3166-1 alpha-3 code (checking/savings accounts)'
            : 'an ISO 3166-1 alpha-2 or alpha-3 code';
      throw appError(ErrorCode.VALIDATION_FAILED, `${field}.countryCode must be ${form}.`, { field: `${field}.countryCode` });
    }
    return code;
  }
  const country = address.country?.toUpperCase() ?? null;
  if (country === null || country === '')
    throw appError(ErrorCode.REQUIRED_ELEMENT_MISSING, `${field} needs countryCode or country.`, { field: `${field}.countryCode` });
  if (!/^[A-Z]{2,3}$/.test(country) || !countries.isValid(country))
    throw appError(ErrorCode.VALIDATION_FAILED, `${field}.country must be an ISO 3166-1 country code.`, { field: `${field}.country` });
  const alpha2 = country.length === 2 ? country : countries.alpha3ToAlpha2(country);
  const alpha3 = country.length === 3 ? country : countries.alpha2ToAlpha3(country);
  if (!alpha2 || !alpha3)
    throw appError(ErrorCode.VALIDATION_FAILED, `${field}.country must be an ISO 3166-1 country code.`, { field: `${field}.country` });
  return wants === 2 ? alpha2 : wants === 3 ? alpha3 : country;
}

const LINE = { min: 1, max: 100, safeText: true };

/** Checks an address of a request and makes the stored form; `existing` keeps a known id. */
export function toAddressDocument(
  address: AddressRequest,
  field: string,
  SvcUserId: string,
  now: Date,
  existing?: AddressDocument,
): AddressDocument {
  const text = (key: 'addressLine1' | 'city' | 'state' | 'postalCode') =>
    checkString(required(address[key], `${field}.${key}`), `${field}.${key}`, LINE)!;
  const addressLine1 = text('addressLine1');
  const city = text('city');
  const state = text('state');
  const postalCode = checkString(required(address.postalCode, `${field}.postalCode`), `${field}.postalCode`, {
    min: 1,
    max: 12,
    pattern: /^[A-Za-z0-9 -]+$/,
    patternText: '1-12 letters, digits, spaces or dashes',
  })!;
  const addressLine2 = checkString(address.addressLine2, `${field}.addressLine2`, { max: 100 }) ?? null;
  const countryCode = addressCountryCode(address, field);
  const id = existing?._id ?? newId('adr_');
  return {
    _id: id,
    SvcUserAddressId: id,
    SvcUserId,
    addressLine1,
    addressLine2,
    city,
    state,
    postalCode,
    countryCode,
    isMain: address.isMain ?? existing?.isMain ?? false,
    dtsRecorded: existing?.dtsRecorded ?? now,
    dtsModified: now,
  };
}

const norm = (value: string | null | undefined) => (value ?? '').trim().toLowerCase();

/** The stored address a deletion names: by SvcUserAddressId, or by its required fields. */
export function findAddress(addresses: AddressDocument[], target: AddressRequest): AddressDocument | undefined {
  if (target.SvcUserAddressId) return addresses.find((a) => a.SvcUserAddressId === target.SvcUserAddressId);
  return addresses.find(
    (a) =>
      norm(a.addressLine1) === norm(target.addressLine1) &&
      norm(a.city) === norm(target.city) &&
      norm(a.state) === norm(target.state) &&
      norm(a.postalCode) === norm(target.postalCode) &&
      (norm(a.countryCode) === norm(target.countryCode ?? target.country) ||
        norm(countries.alpha3ToAlpha2(a.countryCode) ?? a.countryCode) === norm(target.countryCode ?? target.country) ||
        norm(countries.alpha2ToAlpha3(a.countryCode) ?? a.countryCode) === norm(target.countryCode ?? target.country)),
  );
}

/** Keeps exactly one main address when there are any: the last one marked main, else the first. */
export function withOneMain(addresses: AddressDocument[], preferred?: string): AddressDocument[] {
  if (addresses.length === 0) return addresses;
  const main = preferred ?? [...addresses].reverse().find((a) => a.isMain)?._id ?? addresses[0]!._id;
  return addresses.map((a) => ({ ...a, isMain: a._id === main }));
}
