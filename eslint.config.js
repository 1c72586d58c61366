// ESLint flat config: typescript-eslint's strict type-aware rules over src/, test/ and bench/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/'] },
  js.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [...tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // Fastify plugins and node:test callbacks are async by contract even when they do not await.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's describe/test return promises the runner itself tracks.
        {
          allowForKnownSafeCalls: [
            { from: 'package', name: ['describe', 'test', 'it', 'suite'], package: 'node:test' },
          ],
        },
      ],
    },
  },
  {
    // The domain knows no HTTP: it throws DomainError (src/errors.ts) and src/http/errors.ts maps it.
    // Only route files (routes.ts, *-routes.ts) and the composition root may import from src/http/.
    files: [
      'src/devices/**/*.ts',
      'src/nettools/**/*.ts',
      'src/scanner/**/*.ts',
      'src/alerts/**/*.ts',
      'src/import/**/*.ts',
      'src/db/**/*.ts',
      'src/*.ts',
    ],
    ignores: ['src/server.ts', 'src/main.ts', '**/routes.ts', '**/*-routes.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/http', '**/http/*', '**/http/**'],
              message:
                'Domain modules must not import from src/http/: throw DomainError (src/errors.ts); routes map it.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
);
