/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  // examples/ holds the docs' tests (docs/sdk.md), which import the package by name, as your project would.
  roots: ['<rootDir>/test', '<rootDir>/examples'],
  moduleNameMapper: { '^cohort$': '<rootDir>/src/index.ts' },
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  // Integration tests start real servers; give them room on a loaded 2-core machine.
  testTimeout: 30000,
};
