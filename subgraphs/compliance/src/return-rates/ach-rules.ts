/** The Nacha rules the return-rate reports apply. */

/** Nacha return codes by the category the return-rate rules count them in. */
export const UNAUTHORIZED_RETURN_CODES = ['R05', 'R07', 'R10', 'R11', 'R29', 'R51'] as const;
export const ADMINISTRATIVE_RETURN_CODES = ['R02', 'R03', 'R04'] as const;
/** Insufficient or uncollected funds. */
export const NSF_RETURN_CODES = ['R01', 'R09'] as const;

/** Out of compliance at or above these rates, in percent (Nacha: unauthorized 0.5, administrative 3.0, overall 15.0). */
export const THRESHOLDS = { unAuthorized: 0.5, admin: 3.0, total: 15.0 } as const;

/** The rolling window of a report: the 60 days before its reporting date. */
export const WINDOW_DAYS = 60;
