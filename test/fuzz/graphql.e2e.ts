/** Fuzzing of every GraphQL mutation with hostile input: the properties and the framework are in ./suite.ts. */
import { fuzzSuite } from '../support/fuzz/suite.js';

fuzzSuite('graphql');
