import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../platform/runtime/config.js';
import { configFor, SERVICE_CONFIG_KEYS, type ServiceConfig, type ServiceName } from '../../platform/runtime/config-slices.js';

const SERVICES = Object.keys(SERVICE_CONFIG_KEYS) as ServiceName[];
const config = loadConfig({ NODE_ENV: 'test' });

/** The services whose slice holds `key`. */
const holders = (key: string): ServiceName[] => SERVICES.filter((service) => key in configFor(service, config));

describe("each service's slice of the configuration", () => {
  it.each(SERVICES)('%s receives exactly its listed settings, the same values, frozen', (service) => {
    const slice = configFor(service, config);
    expect(Object.keys(slice).sort()).toEqual([...new Set<string>(SERVICE_CONFIG_KEYS[service])].sort());
    for (const [key, value] of Object.entries(slice)) expect(value).toBe(config[key as keyof typeof config]);
    expect(Object.isFrozen(slice)).toBe(true);
  });

  it('gives a setting one service reads to that service alone', () => {
    // The overdraft a card may take an account to is applied where the account's amount is held: payments, not cards.
    expect(holders('cardOverdraftLimit')).toEqual(['payments']);
    expect('cardOverdraftLimit' in configFor('cards', config)).toBe(false);
    expect(holders('geocoderPreload')).toEqual(['user']);
    expect(holders('subscriptionLimits')).toEqual(['gateway']);
    expect(holders('restPublicUrl')).toEqual(['rest-adapter']);
  });

  it('gives what only the starting script reads to no service', () => {
    for (const key of ['mongodbUri', 'dataDir', 'logLevel', 'drainSeconds', 'otlpEndpoint', 'internalSecretGenerated'])
      expect(holders(key), key).toEqual([]);
  });

  it('keeps a setting outside a slice out of its type too', () => {
    const cards: ServiceConfig<'cards'> = configFor('cards', config);
    // @ts-expect-error cards is not given payments' overdraft limit.
    expect(cards.cardOverdraftLimit).toBeUndefined();
  });
});
