/**
 * Text from a recording (span and trial names, tool calls, file names, messages, sample
 * texts) on its way to a terminal. A control character there is an instruction to the
 * terminal: ESC starts a sequence that can clear the screen or set the window title, a
 * C1 character (U+0080–U+009F) is the same in one code point, CR overwrites the line and
 * a newline inside a one-line field fakes a line of output. Each is shown as its JSON
 * escape (`\u001b`, `\r`, …), so JSON output stays valid JSON with the same value.
 */
// oxlint-disable-next-line no-control-regex -- matching control characters is this module's job
const CONTROLS_BUT_LINE_BREAKS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
// oxlint-disable-next-line no-control-regex -- matching control characters is this module's job
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;

const SHORT_ESCAPES: Record<string, string> = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r' };

function escapeControl(c: string): string {
  return SHORT_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** For a one-line field: every control character escaped, `\n` and `\t` included. */
export function terminalLine(text: string): string {
  return text.replace(CONTROLS, escapeControl);
}

/** For text printed over several lines on purpose: `\n` and `\t` kept, the rest escaped. */
export function terminalText(text: string): string {
  return text.replace(CONTROLS_BUT_LINE_BREAKS, escapeControl);
}
