import { appError, ErrorCode } from '../contracts/errors.js';

/** Rules of one string field. */
export interface StringRule {
  min?: number;
  max?: number;
  pattern?: RegExp;
  /** What the pattern means, in words, for the error message. */
  patternText?: string;
  /** Refuse `<`, `>` and values that are only whitespace. */
  safeText?: boolean;
}

const missing = (value: unknown) => value === undefined || value === null || value === '';

/** Refuses a missing value with REQUIRED_ELEMENT_MISSING naming the field. */
export function required<T>(value: T | null | undefined, field: string): T {
  if (missing(value)) throw appError(ErrorCode.REQUIRED_ELEMENT_MISSING, `${field} is required.`, { field });
  return value;
}

/** Checks a string against its rules; `undefined`/`null` pass through (use `required` for presence). */
export function checkString(value: unknown, field: string, rule: StringRule = {}): string | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'string') throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be a string.`, { field });
  // eslint-disable-next-line @typescript-eslint/no-misused-spread -- the length is counted in code points, as JSON Schema's maxLength counts it.
  const length = [...value].length;
  if (rule.min !== undefined && length < rule.min) {
    throw appError(
      ErrorCode.VALIDATION_FAILED,
      `${field} must be ${rule.max !== undefined ? `${rule.min}-${rule.max}` : `at least ${rule.min}`} characters long.`,
      { field },
    );
  }
  if (rule.max !== undefined && length > rule.max) {
    throw appError(
      ErrorCode.VALIDATION_FAILED,
      `${field} must be ${rule.min !== undefined ? `${rule.min}-${rule.max}` : `at most ${rule.max}`} characters long.`,
      { field },
    );
  }
  if (rule.safeText && (/[<>]/.test(value) || value.trim() === '')) {
    throw appError(ErrorCode.VALIDATION_FAILED, `${field} must not contain < or > and must not be only whitespace.`, { field });
  }
  if (rule.pattern && !rule.pattern.test(value)) {
    throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be ${rule.patternText ?? `of the form ${rule.pattern.source}`}.`, { field });
  }
  return value;
}

/** The specs' id pattern: 1-36 letters, digits or underscores. */
export const ID_RULE: StringRule = { min: 1, max: 36, pattern: /^[A-Za-z0-9_]+$/, patternText: 'letters, digits or underscores' };
/** A device's tag (onboarding and recovery): 1-64 letters, digits or `_ . : -`. */
export const DEVICE_TAG_RULE: StringRule = {
  min: 1,
  max: 64,
  pattern: /^[A-Za-z0-9_.:-]+$/,
  patternText: '1-64 letters, digits or _ . : -',
};
/** The specs' external references: 1-32 letters or digits. */
export const REFERENCE_RULE: StringRule = { min: 1, max: 32, pattern: /^[A-Za-z0-9]+$/, patternText: 'letters and digits' };
/** Acquirer reference number: 1-50 characters, no < or >, not only whitespace. */
export const ARN_RULE: StringRule = { min: 1, max: 50, safeText: true };
/** A US ABA routing number: exactly 9 digits. */
export const ROUTING_NUMBER_RULE: StringRule = { pattern: /^\d{9}$/, patternText: 'exactly 9 digits' };
/** An ISO 4217 currency code. */
export const CURRENCY_RULE: StringRule = { pattern: /^[A-Z]{3}$/, patternText: 'a 3-letter ISO 4217 code such as USD' };
/** The aggregator spec's newPassword rules (besides 8-50 characters), each with the message that names it. */
export const NEW_PASSWORD_RULES: ReadonlyArray<{ pattern: RegExp; message: string }> = [
  { pattern: /^[A-Za-z0-9!@#$%^&]*$/, message: 'may contain only letters, digits and the symbols ! @ # $ % ^ &' },
  { pattern: /[0-9]/, message: 'must contain at least one digit' },
  { pattern: /[!@#$%^&]/, message: 'must contain at least one of the symbols ! @ # $ % ^ &' },
  { pattern: /[a-z]/, message: 'must contain at least one lowercase letter' },
  { pattern: /[A-Z]/, message: 'must contain at least one uppercase letter' },
];
/** Email addresses as a bank accepts them: one @, a dot in the domain, no spaces, at most 254 characters. */
export const EMAIL_RULE: StringRule = { max: 254, pattern: /^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]{2,}$/, patternText: 'an email address' };
/** Phone numbers in international form: optional +, 6-15 digits. */
export const PHONE_RULE: StringRule = {
  pattern: /^\+?[0-9]{6,15}$/,
  patternText: 'a phone number of 6-15 digits, optionally starting with +',
};

/** A Nacha return code: R followed by two digits. */
export const RETURN_CODE_PATTERN = /^R\d{2}$/;
