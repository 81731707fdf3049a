/**
 * The dependency rules, run by `npm run lint` (docs/architecture.md, "Layers"). Type-only imports
 * count: a circle of types is a circle a reader has to hold in mind all the same.
 */
const KITS = '^platform/(runtime|telemetry|http|mongo|messaging|security|money)/';
const LAYERS = '^platform/(contracts|runtime|telemetry|http|mongo|messaging|security|money|domain|graphql)/';
const ABOVE_PLATFORM = '^(subgraphs|gateway|rest-adapter|scripts|bench|test|web|schema)/|^codegen\\.ts$';
const SERVICES = '^(subgraphs/[^/]+|gateway|rest-adapter)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module reaches itself through its imports, type-only imports and generated files included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'platform-in-a-layer',
      comment: 'Every module under platform/ belongs to a layer: a folder this file names (a new kit is added to KITS or LAYERS).',
      severity: 'error',
      from: { path: '^platform/', pathNot: LAYERS },
      to: {},
    },
    {
      name: 'contracts-stand-alone',
      comment: 'platform/contracts/ (the event catalogue, the principal, error codes) imports only itself.',
      severity: 'error',
      from: { path: '^platform/contracts/' },
      to: { path: `^platform/|${ABOVE_PLATFORM}`, pathNot: '^platform/contracts/' },
    },
    {
      name: 'kits-below-domain-and-glue',
      comment: 'A technical kit imports contracts and other kits only: never platform/domain/ or platform/graphql/.',
      severity: 'error',
      from: { path: KITS },
      to: { path: '^platform/(domain|graphql)/' },
    },
    {
      name: 'domain-below-glue',
      comment: 'A domain kit (platform/domain/) imports contracts and technical kits only.',
      severity: 'error',
      from: { path: '^platform/domain/' },
      to: { path: '^platform/graphql/' },
    },
    {
      name: 'platform-below-everything',
      comment: 'Nothing in platform/ imports a service, a script, a benchmark, a test or the web client.',
      severity: 'error',
      from: { path: '^platform/' },
      to: { path: ABOVE_PLATFORM },
    },
    {
      name: 'services-apart',
      comment: 'A service imports no other service: shared code lives in platform/.',
      severity: 'error',
      from: { path: SERVICES },
      to: { path: SERVICES, pathNot: '^$1/' },
    },
    {
      name: 'resolver-types-for-resolvers',
      comment: 'Only resolvers import the generated resolver types; everything else takes schema-types.ts, which imports nothing.',
      severity: 'error',
      from: { pathNot: '/src/(resolvers/|__generated__/)' },
      to: { path: '/__generated__/resolvers-types\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js'],
    },
  },
};
