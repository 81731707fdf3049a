import fc from 'fast-check';
import Negotiator from 'negotiator';
import MIMEType from 'whatwg-mimetype';
import { describe, expect, it } from 'vitest';
import { answerTypeFor, essenceOf } from '../../../gateway/src/pipeline/media-types.js';

// The pipeline reads `Accept` and `Content-Type` itself; Apollo Server reads them with `negotiator`
// and `whatwg-mimetype`. Headers drawn from the pieces that decide a choice must be read the same.

/** The types a single answer may be sent as, in Apollo Server's order of offer. */
const OFFERED = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'application/json; callbackSpec=1.0; charset=utf-8',
];

const token = fc.constantFrom('application', 'APPLICATION', 'json', 'Json', 'graphql-response+json', 'text', 'html', '*', 'x', '');
const space = fc.constantFrom('', '', ' ', '  ', '\t');
const parameter = fc.tuple(
  fc.constantFrom('q', 'Q', 'charset', 'callbackSpec', 'level', 'q '),
  fc.constantFrom('0', '1', '0.5', '0.9', '1.0', '0.001', 'utf-8', 'UTF-8', '"utf-8"', '1.0', '"1.0"', 'abc', '', '2', '-1', '"a,b"'),
  space,
);
const mediaRange = fc
  .tuple(space, token, fc.constantFrom('/', '/', '', '//'), token, fc.array(parameter, { maxLength: 3 }), space)
  .map(
    ([before, type, slash, subtype, parameters, after]) =>
      `${before}${type}${slash}${subtype}${parameters.map(([name, value, gap]) => `;${gap}${name}=${value}`).join('')}${after}`,
  );
const accept = fc.array(mediaRange, { minLength: 1, maxLength: 5 }).map((ranges) => ranges.join(','));
const contentType = fc.oneof(
  mediaRange,
  fc.string({ maxLength: 24 }),
  fc.constantFrom('text/plain', ' TEXT/Plain ; charset=utf-8', 'multipart/form-data; boundary=x', 'application/json'),
);

describe('the answer type', () => {
  it('is JSON without an Accept header, and the same answer for the same header', () => {
    expect(answerTypeFor(undefined)).toBe('application/json; charset=utf-8');
    expect(answerTypeFor('application/graphql-response+json, application/json;q=0.9')).toBe(
      'application/graphql-response+json; charset=utf-8',
    );
    expect(answerTypeFor('application/graphql-response+json, application/json;q=0.9')).toBe(
      'application/graphql-response+json; charset=utf-8',
    );
    expect(answerTypeFor('image/png')).toBeNull();
  });

  it('is the type negotiator chooses for any Accept header', () => {
    fc.assert(
      fc.property(accept, (header) => {
        const negotiated = new Negotiator({ headers: { accept: header } }).mediaType(OFFERED) ?? null;
        expect(answerTypeFor(header)).toBe(negotiated);
      }),
      { seed: 20261128, numRuns: 20_000 },
    );
  });
});

describe('the content type essence', () => {
  it('is the essence the WHATWG MIME parser reads, or null where it reads none', () => {
    fc.assert(
      fc.property(contentType, (header) => {
        expect(essenceOf(header)).toBe(MIMEType.parse(header)?.essence ?? null);
      }),
      { seed: 20261128, numRuns: 20_000 },
    );
  });
});
