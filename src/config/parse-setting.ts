import type { SettingSpec } from './config-schema';

export type ParsedSetting =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly reason: string };

const TRUE_WORDS = new Set(['true', '1', 'yes']);
const FALSE_WORDS = new Set(['false', '0', 'no']);

/**
 * Turns the text of a flag or environment variable into the setting's type. Only the syntax is checked
 * here; bounds and relations between settings are `validateConfig`'s job, so both kinds of problem are
 * reported together.
 */
export function parseSetting(spec: SettingSpec, text: string): ParsedSetting {
  switch (spec.kind) {
    case 'boolean': {
      const word = text.trim().toLowerCase();
      if (TRUE_WORDS.has(word)) return { ok: true, value: true };
      if (FALSE_WORDS.has(word)) return { ok: true, value: false };
      return { ok: false, reason: `must be true or false, got '${text}'` };
    }
    case 'clockMode': {
      const word = text.trim().toLowerCase();
      if (TRUE_WORDS.has(word)) return { ok: true, value: true };
      if (FALSE_WORDS.has(word)) return { ok: true, value: false };
      if (word === 'running') return { ok: true, value: 'running' };
      return {
        ok: false,
        reason: `must be true (a clock that stands still), running (one that follows wall time) or false, got '${text}'`,
      };
    }
    case 'integer': {
      const trimmed = text.trim();
      // Digits only: Number('') is 0, Number('1e3') is 1000 and Number('0x10') is 16, none of which a
      // person typing a timeout means.
      if (!/^[+-]?\d+$/.test(trimmed)) return { ok: false, reason: `must be a whole number, got '${text}'` };
      return { ok: true, value: Number(trimmed) };
    }
    case 'urls': {
      const trimmed = text.trim();
      if (trimmed === '') return { ok: true, value: Object.freeze([]) };
      return { ok: true, value: Object.freeze(trimmed.split(',').map((part) => part.trim())) };
    }
    case 'address':
    case 'adminAddress':
    case 'advertisedAddress':
    case 'name':
    case 'path':
    case 'file':
    case 'secret':
    case 'password':
    case 'text':
    case 'logLevel':
      return { ok: true, value: text };
  }
}
