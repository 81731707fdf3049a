/**
 * The contract behind the end-user API's `POST /geocode`: a free-form address in, a short ranked
 * list of places out. The offline implementation (`offline.ts`) answers from packaged data; a
 * hosted geocoding service can implement the same interface behind the same resolver.
 */

/** Which parts of the input agreed with a candidate, in canonical form. Absent parts did not match. */
export interface GeocodeMatch {
  /** The postal code from the input that located the candidate (a US ZIP's five digits, a Canadian FSA). */
  postalCode?: string;
  /** The candidate's city name as the data spells it, when the input named that city. */
  city?: string;
  /** The state or province code (`NY`, `ON`) when the input named it by code or by name. */
  state?: string;
  /** ISO 3166-1 alpha-2 code when the input named the country by code or by name. */
  countryCode?: string;
}

/** One place the address may refer to. */
export interface GeocodeCandidate {
  /** WGS 84 degrees. */
  latitude: number;
  /** WGS 84 degrees. */
  longitude: number;
  /** How sure the geocoder is, from 0 (a guess) to 1 (every part of the input agreed). */
  confidence: number;
  /** ISO 3166-1 alpha-2 code of the country the candidate lies in, whether or not the input named it. */
  countryCode: string;
  /** Which parts of the input matched this candidate. */
  matched: GeocodeMatch;
  /** A display label, such as `New York, NY 10118, United States` or `Paris, France`. */
  label: string;
  /** What the coordinates stand for: the centre of a postal code area, or of a city. */
  precision: GeocodePrecision;
}

/** `postalCode` is finer than `city`; neither is a rooftop position. */
export type GeocodePrecision = 'postalCode' | 'city';

/** The answer to one query. */
export interface GeocodeResult {
  /** The address as it was given. */
  query: string;
  /** Best first, at most {@link MAX_CANDIDATES}; empty when nothing in the input was recognised. */
  candidates: GeocodeCandidate[];
}

/** The most candidates a result carries. */
export const MAX_CANDIDATES = 5;

/** Turns a free-form address into ranked candidate places. */
export interface Geocoder {
  /**
   * Geocodes one free-form address. Never rejects for an address that matches nothing: the result
   * then has no candidates. Length and emptiness limits are the caller's to enforce.
   */
  geocode(address: string): Promise<GeocodeResult>;
}
