/**
 * Names and codes of the regions an address may name: US states (with DC, territories and the
 * military "states"), Canadian provinces and countries. Country names come from the runtime's ICU
 * data (`Intl.DisplayNames`), plus the everyday aliases below; nothing here is fetched.
 */

/** A state or province that addresses name by code or by name. */
export interface Subdivision {
  /** The postal abbreviation: `NY`, `ON`. */
  code: string;
  name: string;
  /** The country it belongs to in address terms. */
  countryCode: 'US' | 'CA';
  /** For US territories that are ISO 3166-1 countries of their own (`PR`, `GU`…): that code. */
  isoCountryCode?: string;
  /** For Canadian provinces: the GeoNames admin1 code the world-cities data uses. */
  geonamesCode?: string;
}

const US: ReadonlyArray<[string, string]> = [
  ['AL', 'Alabama'],
  ['AK', 'Alaska'],
  ['AZ', 'Arizona'],
  ['AR', 'Arkansas'],
  ['CA', 'California'],
  ['CO', 'Colorado'],
  ['CT', 'Connecticut'],
  ['DE', 'Delaware'],
  ['DC', 'District of Columbia'],
  ['FL', 'Florida'],
  ['GA', 'Georgia'],
  ['HI', 'Hawaii'],
  ['ID', 'Idaho'],
  ['IL', 'Illinois'],
  ['IN', 'Indiana'],
  ['IA', 'Iowa'],
  ['KS', 'Kansas'],
  ['KY', 'Kentucky'],
  ['LA', 'Louisiana'],
  ['ME', 'Maine'],
  ['MD', 'Maryland'],
  ['MA', 'Massachusetts'],
  ['MI', 'Michigan'],
  ['MN', 'Minnesota'],
  ['MS', 'Mississippi'],
  ['MO', 'Missouri'],
  ['MT', 'Montana'],
  ['NE', 'Nebraska'],
  ['NV', 'Nevada'],
  ['NH', 'New Hampshire'],
  ['NJ', 'New Jersey'],
  ['NM', 'New Mexico'],
  ['NY', 'New York'],
  ['NC', 'North Carolina'],
  ['ND', 'North Dakota'],
  ['OH', 'Ohio'],
  ['OK', 'Oklahoma'],
  ['OR', 'Oregon'],
  ['PA', 'Pennsylvania'],
  ['RI', 'Rhode Island'],
  ['SC', 'South Carolina'],
  ['SD', 'South Dakota'],
  ['TN', 'Tennessee'],
  ['TX', 'Texas'],
  ['UT', 'Utah'],
  ['VT', 'Vermont'],
  ['VA', 'Virginia'],
  ['WA', 'Washington'],
  ['WV', 'West Virginia'],
  ['WI', 'Wisconsin'],
  ['WY', 'Wyoming'],
  ['AA', 'Armed Forces Americas'],
  ['AE', 'Armed Forces Europe'],
  ['AP', 'Armed Forces Pacific'],
];

/** US territories and freely associated states that have ZIP codes and an ISO country code of their own. */
const US_TERRITORIES: ReadonlyArray<[string, string]> = [
  ['PR', 'Puerto Rico'],
  ['GU', 'Guam'],
  ['VI', 'Virgin Islands'],
  ['AS', 'American Samoa'],
  ['MP', 'Northern Mariana Islands'],
  ['FM', 'Micronesia'],
  ['MH', 'Marshall Islands'],
  ['PW', 'Palau'],
];

const CANADA: ReadonlyArray<[string, string, string]> = [
  ['AB', 'Alberta', '01'],
  ['BC', 'British Columbia', '02'],
  ['MB', 'Manitoba', '03'],
  ['NB', 'New Brunswick', '04'],
  ['NL', 'Newfoundland and Labrador', '05'],
  ['NS', 'Nova Scotia', '07'],
  ['ON', 'Ontario', '08'],
  ['PE', 'Prince Edward Island', '09'],
  ['QC', 'Quebec', '10'],
  ['SK', 'Saskatchewan', '11'],
  ['YT', 'Yukon', '12'],
  ['NT', 'Northwest Territories', '13'],
  ['NU', 'Nunavut', '14'],
];

export const SUBDIVISIONS: readonly Subdivision[] = [
  ...US.map(([code, name]): Subdivision => ({ code, name, countryCode: 'US' })),
  ...US_TERRITORIES.map(([code, name]): Subdivision => ({ code, name, countryCode: 'US', isoCountryCode: code })),
  ...CANADA.map(([code, name, geonamesCode]): Subdivision => ({ code, name, countryCode: 'CA', geonamesCode })),
];

/** Other names an address may use for a subdivision (normalised form → code). */
export const SUBDIVISION_ALIASES: Readonly<Record<string, string>> = {
  'washington dc': 'DC',
  'washington d c': 'DC',
  'us virgin islands': 'VI',
  newfoundland: 'NL',
  pei: 'PE',
  'quebec province': 'QC',
  'yukon territory': 'YT',
};

/** Everyday country names that ICU's English display names do not give (normalised form → alpha-2). */
export const COUNTRY_ALIASES: Readonly<Record<string, string>> = {
  usa: 'US',
  'united states of america': 'US',
  uk: 'GB',
  'great britain': 'GB',
  britain: 'GB',
  england: 'GB',
  scotland: 'GB',
  wales: 'GB',
  'northern ireland': 'GB',
  holland: 'NL',
  'the netherlands': 'NL',
  nederland: 'NL',
  deutschland: 'DE',
  espana: 'ES',
  italia: 'IT',
  brasil: 'BR',
  schweiz: 'CH',
  suisse: 'CH',
  osterreich: 'AT',
  polska: 'PL',
  nippon: 'JP',
  'south korea': 'KR',
  korea: 'KR',
  'republic of korea': 'KR',
  'north korea': 'KP',
  'russian federation': 'RU',
  'czech republic': 'CZ',
  turkey: 'TR',
  turkiye: 'TR',
  'ivory coast': 'CI',
  'cote divoire': 'CI',
  burma: 'MM',
  'democratic republic of the congo': 'CD',
  drc: 'CD',
  'republic of the congo': 'CG',
  uae: 'AE',
  emirates: 'AE',
  vatican: 'VA',
  'vatican city': 'VA',
  macedonia: 'MK',
  swaziland: 'SZ',
  'east timor': 'TL',
  'hong kong': 'HK',
  macau: 'MO',
  macao: 'MO',
  'cape verde': 'CV',
  bosnia: 'BA',
  palestine: 'PS',
  'the bahamas': 'BS',
  'the gambia': 'GM',
};

/** Codes that stand for a country in addresses although they are not its ISO code. */
export const COUNTRY_CODE_ALIASES: Readonly<Record<string, string>> = { UK: 'GB', USA: 'US', UAE: 'AE' };

const displayNames = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });

/** The English name of a country, or the code itself when ICU does not know it. */
export function countryName(countryCode: string): string {
  try {
    return displayNames.of(countryCode) ?? countryCode;
  } catch {
    return countryCode;
  }
}

/**
 * ICU's English name for a country and the shorter forms people write: without a parenthesis
 * ("Myanmar (Burma)"), without a suffix ("Hong Kong SAR China") or a dash part ("Congo - Kinshasa").
 */
export function countryNameVariants(countryCode: string): string[] {
  const name = countryName(countryCode);
  if (name === countryCode) return [];
  const variants = new Set([name]);
  variants.add(name.replace(/\s*\(.*\)\s*/, ' ').trim());
  variants.add(name.replace(/\s+SAR China$/, ''));
  variants.add(name.split(' - ')[0]!.trim());
  return [...variants].filter((v) => v.length > 0);
}
