/**
 * ISO 4217 (List One, 2025): the alphabetic codes of the currencies and funds in use, with the
 * places of their minor unit. Pinned here rather than read from the runtime's ICU data, whose
 * places follow CLDR's display rules (HUF and COP with none) and whose list keeps withdrawn codes:
 * a stored amount's meaning must not change with a Node.js upgrade. Codes without a minor unit
 * (precious metals, XDR, test codes) are not money here.
 */
const PLACES_BY_EXCEPTION: Readonly<Record<0 | 3 | 4, readonly string[]>> = {
  0: ['BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF'],
  3: ['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND'],
  4: ['CLF', 'UYW'],
};

/** Every code of the list; those not named above have two places. */
const CODES = `AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD CAD CDF CHE CHF
CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR
ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR
MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS
SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF XCD XCG XOF XPF
YER ZAR ZMW ZWG`.split(/\s+/);

/** The places of each code's minor unit. */
export const ISO_4217: ReadonlyMap<string, number> = new Map(
  CODES.map((code) => {
    const places = ([0, 3, 4] as const).find((digits) => PLACES_BY_EXCEPTION[digits].includes(code));
    return [code, places ?? 2];
  }),
);
