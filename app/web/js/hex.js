// Pointy-top hex geometry in axial coordinates (q, r), for SVG maps.

const SQRT3 = Math.sqrt(3);

/** Centre of cell (q, r) for hexes of radius ``size``. */
export function hexCentre(q, r, size) {
  return [size * SQRT3 * (q + r / 2), size * 1.5 * r];
}

/** The polygon points of a hex of radius ``r`` centred at (cx, cy). */
export function hexPoints(cx, cy, r) {
  const out = [];
  for (let i = 0; i < 6; i++) {
    const a = (Math.PI / 180) * (60 * i - 30);
    out.push(`${(cx + r * Math.cos(a)).toFixed(1)},${(cy + r * Math.sin(a)).toFixed(1)}`);
  }
  return out.join(" ");
}

/** A viewBox string that holds every centre with ``pad`` around it. */
export function viewBoxOf(centres, pad) {
  const xs = centres.map((c) => c[0]);
  const ys = centres.map((c) => c[1]);
  const minX = Math.min(...xs) - pad, maxX = Math.max(...xs) + pad;
  const minY = Math.min(...ys) - pad, maxY = Math.max(...ys) + pad;
  return `${minX.toFixed(0)} ${minY.toFixed(0)} ${(maxX - minX).toFixed(0)} ${(maxY - minY).toFixed(0)}`;
}
