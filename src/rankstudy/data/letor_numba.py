"""The LETOR line scanner as one compiled loop (numba): a single pass over a chunk's bytes that
checks each line's structure and converts its numbers, for :func:`rankstudy.data.letor.read_letor`.

It accepts only input that the vectorised numpy parse (``letor._parse_well_formed``) accepts and
gives the same arrays for it; anything else makes it answer MALFORMED and the caller re-parses
the chunk the numpy way, which either reads it or names the bad line. So it needs no error
messages of its own, and where it is unsure it may simply refuse.

Numbers: a decimal with an integer mantissa of at most 2**53 and a power of ten in -22..22 is
one multiplication or division of two exact doubles, hence correctly rounded (Clinger's fast
path), which is what ``float()`` and the numpy path give. Any other well-formed number (more
digits, larger exponents) is copied out, one per line, for the caller to convert with the numpy
path's own converter. Kept at module level so that numba's on-disk cache is found by later
processes; imported only when used, since importing numba costs start-up time."""

from __future__ import annotations

import numba
import numpy as np

OK, MALFORMED = 0, 1
_FAST, _SLOW, _BAD = 0, 1, 2
_POW10 = np.array([10.0 ** k for k in range(23)])  # all exact in float64
_MAX_DIGITS = 18  # 10**18 - 1 still fits in int64
_MAX_EXACT = 1 << 53
_MAX_QID_DIGITS = 18  # letor.MAX_QID_DIGITS


@numba.njit(cache=True, nogil=True, inline="always")
def _ends_field(buf, i):
    """Whether a field ends at i: whitespace (newline included, so the chunk's end) or a comment."""
    return buf[i] == 32 or (9 <= buf[i] <= 13) or buf[i] == 35


@numba.njit(cache=True, nogil=True, inline="always")
def _skip_blanks(buf, i):
    """First position at or after i that is not whitespace other than a newline."""
    while (buf[i] == 32 or (9 <= buf[i] <= 13 and buf[i] != 10)):
        i += 1
    return i


@numba.njit(cache=True, nogil=True, inline="always")
def _number(buf, i):
    """(end, value, kind) of the number ``[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?`` at i.

    kind is _FAST (value is exact), _SLOW (well-formed, value left to the caller) or _BAD.
    ``buf`` ends with a newline and zero bytes (see ``padded``), so no bounds checks are needed."""
    negative = False
    if buf[i] == 43 or buf[i] == 45:
        negative = buf[i] == 45
        i += 1
    mantissa, digits, exponent, point = 0, 0, 0, 0
    while True:  # integer and fraction digits in one loop: one unpredictable exit per number, not two
        d = buf[i] - 48
        if 0 <= d <= 9:
            if digits < _MAX_DIGITS:  # past that the number is slow, and the mantissa must not overflow
                mantissa = mantissa * 10 + d
            digits += 1
            exponent -= point
        elif d == -2 and point == 0:  # the decimal point
            point = 1
        else:
            break
        i += 1
    if digits == 0:
        return i, 0.0, _BAD
    if buf[i] == 101 or buf[i] == 69:
        i += 1
        sign = 1
        if buf[i] == 43 or buf[i] == 45:
            sign = -1 if buf[i] == 45 else 1
            i += 1
        power, power_digits = 0, 0
        while 48 <= buf[i] <= 57:
            if power < 100_000:  # saturate: far outside the fast range already
                power = power * 10 + (buf[i] - 48)
            power_digits += 1
            i += 1
        if power_digits == 0:
            return i, 0.0, _BAD
        exponent += sign * power
    # every digit (leading zeros too) is in the mantissa, an exact double: Clinger's fast path
    if digits > _MAX_DIGITS or mantissa > _MAX_EXACT or exponent > 22 or exponent < -22:
        return i, 0.0, _SLOW
    value = np.float64(mantissa)
    if exponent >= 0:
        value *= _POW10[exponent]
    else:
        value /= _POW10[-exponent]
    return i, -value if negative else value, _FAST


@numba.njit(cache=True, nogil=True, inline="always")
def _keep_slow(buf, start, stop, slow_text, used):
    """Append buf[start:stop] and a newline to slow_text (numbers left to the exact converter)."""
    for j in range(start, stop):
        slow_text[used + j - start] = buf[j]
    used += stop - start
    slow_text[used] = 10
    return used + 1


@numba.njit(cache=True, nogil=True)
def scan(buf, n, limit, check_labels, lo, hi, label, qid, index, value, pairs_per_row,
         comment_start, line_end, slow_text, slow_where):
    """Parse every line of the first n bytes of ``buf`` (uint8) into the preallocated outputs.

    ``buf`` continues with a newline and a zero byte (see ``padded``).

    Per data line: label, qid, its number of index:value pairs, and the positions of its comment
    (its first '#', or its end) and of its end; the pairs go to ``index`` and ``value`` in order.
    Feature indices must be 1..limit. Slow numbers are written to ``slow_text`` one per line; for
    each, ``slow_where`` holds its position in ``value``, or -1 - row for a label.
    Returns (status, rows, pairs, slow numbers, bytes of slow_text used)."""
    seen = np.full(limit + 1, -1, np.int64)  # row in which each feature index last occurred
    i, row, k, n_slow, used = 0, 0, 0, 0, 0
    while i < n:
        i = _skip_blanks(buf, i)
        if buf[i] == 10:  # blank line
            i += 1
            continue
        if buf[i] == 35:  # comment-only line
            while buf[i] != 10:
                i += 1
            i += 1
            continue

        start = i
        i, x, kind = _number(buf, i)
        if kind == _BAD or not _ends_field(buf, i):
            return MALFORMED, row, k, n_slow, used
        if kind == _SLOW:
            used = _keep_slow(buf, start, i, slow_text, used)
            slow_where[n_slow] = -1 - row
            n_slow += 1
        elif check_labels and (x != np.floor(x) or x < lo or x > hi):
            return MALFORMED, row, k, n_slow, used
        label[row] = x

        i = _skip_blanks(buf, i)
        if not (buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100 and buf[i + 3] == 58):
            return MALFORMED, row, k, n_slow, used  # no 'qid:' second field
        i += 4
        negative = buf[i] == 45
        if negative:
            i += 1
        q, q_digits = 0, 0
        while 48 <= buf[i] <= 57:
            if q_digits < _MAX_QID_DIGITS:
                q = q * 10 + (buf[i] - 48)
            q_digits += 1
            i += 1
        if q_digits == 0 or q_digits > _MAX_QID_DIGITS or not _ends_field(buf, i):
            return MALFORMED, row, k, n_slow, used
        qid[row] = -q if negative else q

        first = k
        while True:
            i = _skip_blanks(buf, i)
            if buf[i] == 10 or buf[i] == 35:
                break
            feature, f_digits = 0, 0
            while 48 <= buf[i] <= 57:
                if feature <= limit:  # past the limit it is an error; stop before it overflows
                    feature = feature * 10 + (buf[i] - 48)
                f_digits += 1
                i += 1
            if f_digits == 0 or feature < 1 or feature > limit or buf[i] != 58:
                return MALFORMED, row, k, n_slow, used
            if seen[feature] == row:  # duplicate index in this line
                return MALFORMED, row, k, n_slow, used
            seen[feature] = row
            i += 1
            start = i
            i, x, kind = _number(buf, i)
            if kind == _BAD or not _ends_field(buf, i):
                return MALFORMED, row, k, n_slow, used
            if kind == _SLOW:
                used = _keep_slow(buf, start, i, slow_text, used)
                slow_where[n_slow] = k
                n_slow += 1
            index[k] = feature
            value[k] = x
            k += 1
        pairs_per_row[row] = k - first

        comment_start[row] = i
        while buf[i] != 10:
            i += 1
        line_end[row] = i
        i += 1
        row += 1
    return OK, row, k, n_slow, used


def padded(chunk) -> np.ndarray:
    """The bytes of ``chunk``, a newline and a zero byte, as scan() needs them: every loop stops
    at the newline (whether or not the chunk ends with one) or the zero without a bounds check."""
    buf = np.empty(len(chunk) + 2, dtype=np.uint8)
    buf[:len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
    buf[len(chunk):] = (10, 0)
    return buf
