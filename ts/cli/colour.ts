/**
 * Whether help and usage may be coloured. clipanion decides from a process-wide colour
 * depth read from the environment at start-up (TERM, COLORTERM), not from where the output
 * goes, so `probe --help | less` got escape codes. Colour only for a terminal, and never
 * with NO_COLOR set to anything but the empty string (no-color.org) or TERM=dumb.
 */
export function wantsColour(context: { stdout: unknown; env: Record<string, string | undefined>; colorDepth: number }): boolean {
  const noColor = context.env.NO_COLOR;
  if (noColor !== undefined && noColor !== '') return false;
  if (context.env.TERM === 'dumb') return false;
  if ((context.stdout as { isTTY?: boolean }).isTTY !== true) return false;
  return context.colorDepth > 1;
}
