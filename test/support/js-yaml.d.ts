/** The part of js-yaml (a devDependency without bundled types) the tests use. */
declare module 'js-yaml' {
  export function load(text: string): unknown;
}
