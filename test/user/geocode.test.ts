import { beforeAll, describe, expect, it } from 'vitest';
import type { GeocodeCandidate, GeocodeResult } from '../../subgraphs/user/src/geocode/geocoder.js';
import { OfflineGeocoder, extractPostalCodes, placeKey } from '../../subgraphs/user/src/geocode/offline.js';

const geocoder = new OfflineGeocoder();

beforeAll(async () => {
  await geocoder.warmUp();
});

function kmBetween(aLat: number, aLon: number, bLat: number, bLon: number): number {
  const rad = Math.PI / 180;
  const h =
    Math.sin(((bLat - aLat) * rad) / 2) ** 2 + Math.cos(aLat * rad) * Math.cos(bLat * rad) * Math.sin(((bLon - aLon) * rad) / 2) ** 2;
  return 2 * 6371 * Math.asin(Math.sqrt(h));
}

/** The best candidate, which must lie within `km` of the point. */
async function best(address: string, latitude: number, longitude: number, km: number): Promise<GeocodeCandidate> {
  const { candidates } = await geocoder.geocode(address);
  const first = candidates[0];
  expect(first, `no candidate for ${address}`).toBeDefined();
  expect(kmBetween(first!.latitude, first!.longitude, latitude, longitude), first!.label).toBeLessThan(km);
  return first!;
}

describe('the offline geocoder', () => {
  it('places 350 Fifth Avenue, New York, NY 10118 at its ZIP code, with every part agreeing', async () => {
    const first = await best('350 Fifth Avenue, New York, NY 10118', 40.7484, -73.9857, 2);
    expect(first).toMatchObject({
      precision: 'postalCode',
      countryCode: 'US',
      matched: { postalCode: '10118', city: 'New York', state: 'NY' },
      label: 'New York, NY 10118, United States',
    });
    expect(first.confidence).toBeGreaterThanOrEqual(0.9);
  });

  it('reads the same address without commas', async () => {
    const first = await best('350 Fifth Avenue New York NY 10118', 40.7484, -73.9857, 2);
    expect(first.matched).toEqual({ postalCode: '10118', city: 'New York', state: 'NY' });
  });

  it('finds Beverly Hills from its city, state and ZIP code', async () => {
    const first = await best('Beverly Hills, CA 90210', 34.09, -118.41, 3);
    expect(first).toMatchObject({ precision: 'postalCode', matched: { postalCode: '90210', city: 'Beverly Hills', state: 'CA' } });
  });

  it('finds a ZIP code given alone, and a ZIP+4 by its first five digits', async () => {
    const zip = await best('90210', 34.09, -118.41, 3);
    expect(zip).toMatchObject({ precision: 'postalCode', matched: { postalCode: '90210' } });
    expect(zip.label).toBe('Beverly Hills, CA 90210, United States');
    const zipPlus4 = await best('10118-0110', 40.7484, -73.9857, 2);
    expect(zipPlus4.matched.postalCode).toBe('10118');
  });

  it('finds Chicago from a city and a state code, in capitals or not', async () => {
    const first = await best('Chicago, IL', 41.88, -87.63, 15);
    expect(first).toMatchObject({ precision: 'city', countryCode: 'US', matched: { city: 'Chicago', state: 'IL' } });
    await best('chicago, il', 41.88, -87.63, 15);
    await best('Chicago, Illinois', 41.88, -87.63, 15);
  });

  it('picks Springfield, Illinois over the larger Springfields when the state says IL', async () => {
    const { candidates } = await geocoder.geocode('Springfield, IL');
    expect(candidates[0]).toMatchObject({ label: 'Springfield, IL, United States', matched: { state: 'IL' } });
    expect(kmBetween(candidates[0]!.latitude, candidates[0]!.longitude, 39.8, -89.65)).toBeLessThan(10);
    // Without the state the most populous one (Missouri) leads, less surely.
    const alone = await geocoder.geocode('Springfield');
    expect(alone.candidates[0]!.label).toBe('Springfield, MO, United States');
    expect(alone.candidates[0]!.confidence).toBeLessThan(candidates[0]!.confidence);
  });

  it('finds cities outside the US by name and country, and by name alone', async () => {
    const paris = await best('Paris, France', 48.8566, 2.3522, 10);
    expect(paris).toMatchObject({ countryCode: 'FR', label: 'Paris, France', matched: { city: 'Paris', countryCode: 'FR' } });
    const berlin = await best('Berlin, Germany', 52.52, 13.405, 10);
    expect(berlin.matched.countryCode).toBe('DE');
    await best('Berlin', 52.52, 13.405, 10);
    await best('Sao Paulo, Brazil', -23.55, -46.63, 15);
    // A state code turns Paris into Paris, Texas.
    await best('Paris, TX', 33.66, -95.55, 10);
  });

  it('finds London from a UK address, whose postcode says United Kingdom', async () => {
    const first = await best('10 Downing Street, London SW1A 2AA', 51.5034, -0.1276, 10);
    expect(first).toMatchObject({ countryCode: 'GB', precision: 'city', matched: { city: 'London' } });
  });

  it('locates a Canadian postal code by its forward sortation area', async () => {
    const first = await best('24 Sussex Drive, Ottawa, ON K1M 1M4', 45.4444, -75.6939, 5);
    expect(first).toMatchObject({
      precision: 'postalCode',
      countryCode: 'CA',
      matched: { postalCode: 'K1M', city: 'Ottawa', state: 'ON' },
    });
  });

  it('ranks a postal code that agrees with the city above the city alone', async () => {
    const { candidates } = await geocoder.geocode('Main St, Springfield, MA 01103');
    expect(candidates.map((c) => c.precision).slice(0, 2)).toEqual(['postalCode', 'city']);
    expect(candidates[0]!.confidence).toBeGreaterThan(candidates[1]!.confidence);
    expect(candidates[1]!.label).toBe('Springfield, MA, United States');
  });

  it('lets a named city and country outweigh a foreign postal code that is also a US ZIP code', async () => {
    const first = await best('10115 Berlin, Germany', 52.52, 13.405, 10);
    expect(first.precision).toBe('city');
  });

  it('returns no candidates for nonsense, blanks, an empty string or a very long input', async () => {
    for (const address of ['qwxzv blorptastic zzyzzx', '   ', '', '!!! ???', 'x'.repeat(10_000), '9'.repeat(300)]) {
      const result: GeocodeResult = await geocoder.geocode(address);
      expect(result).toEqual({ query: address, candidates: [] });
    }
  });

  it('answers the same way every time, with at most five candidates, best first', async () => {
    const first = await geocoder.geocode('London');
    const second = await new OfflineGeocoder().geocode('London');
    expect(second).toEqual(first);
    expect(first.candidates.length).toBe(5);
    const confidences = first.candidates.map((c) => c.confidence);
    expect([...confidences].sort((a, b) => b - a)).toEqual(confidences);
    for (const c of first.candidates) {
      expect(c.confidence).toBeGreaterThanOrEqual(0);
      expect(c.confidence).toBeLessThanOrEqual(1);
    }
    expect((await new OfflineGeocoder({ maxCandidates: 2 }).geocode('London')).candidates).toHaveLength(2);
  });

  it('answers a query in well under a millisecond once its indexes are built', async () => {
    const started = performance.now();
    for (let i = 0; i < 200; i++) await geocoder.geocode('350 Fifth Avenue, New York, NY 10118');
    expect((performance.now() - started) / 200).toBeLessThan(2);
  });
});

describe('address parsing', () => {
  it('recognises US ZIP and ZIP+4, Canadian and UK postal codes, and other numeric codes', () => {
    expect(extractPostalCodes('New York, NY 10118-0110').codes).toEqual([{ kind: 'us', value: '10118-0110', lookup: '10118' }]);
    expect(extractPostalCodes('Ottawa ON k1m 1m4').codes).toEqual([{ kind: 'ca', value: 'K1M 1M4', lookup: 'K1M' }]);
    expect(extractPostalCodes('London SW1A 2AA').codes).toEqual([{ kind: 'uk', value: 'SW1A 2AA', lookup: 'SW1A' }]);
    expect(extractPostalCodes('8001 Zürich').codes).toEqual([{ kind: 'generic', value: '8001', lookup: '8001' }]);
  });

  it('folds case, accents, punctuation and Saint/St. into one lookup key', () => {
    expect(placeKey('Saint-Étienne')).toBe('st etienne');
    expect(placeKey('St. Louis')).toBe(placeKey('Saint Louis'));
    expect(placeKey('São Paulo')).toBe('sao paulo');
  });
});
