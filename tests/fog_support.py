"""A village's grease program for the tests: 300 establishments from a business-licence list
(made here, with six bad rows), two haulers, and a year (2026) of pump-outs planned so that
the findings can be counted by hand (see EXPECTED).

Every establishment ``F0000``..``F0299`` has an interceptor ``GI-1`` (1,000 gal, 48 in liquid
depth, pumped every 90 days); every 50th (0, 50, ... 250) also a trap ``HT-1`` (50 gal, 12 in,
every 35 days). All installed 2020-06-01, taken on by the program 2026-01-01 (so the first
pump-out is not judged against the installation and, before any, a device is due 90 (35)
days after 2026-01-01). The 25 % rule: 12 in of a 48 in interceptor, 3 in of a 12 in trap.

The regular year of an interceptor: pumped 03-15, 06-10, 09-05, 12-01 (87 days apart), FOG
4 in + solids 3 in, 900 gal: no finding. A trap: the 1st of every month, FOG 1 + solids 1 in,
45 gal: no finding. Then:

- LATE (5, 17, 42): the third pumping on 10-20 instead of 09-05: due 09-08 (06-10 + 90),
  pumped 42 days after it was due. One "overdue" each; 10-20 to 12-01 is 42 days, in time.
- OVER25 (8, 60): the 06-10 pumping found FOG 8 + solids 5 = 13 in >= 12 in: "too late",
  the interval halves to 45 days. 09-05 is 87 days after 06-10, due 07-25: 42 days late;
  12-01 is 87 days after 09-05, due 10-20: 42 days late. So 1 "too late" and 2 "overdue" each;
  next due 2027-01-15, not overdue at the year's end.
- EXACT25 (99): 12-01 found FOG 6 + solids 6 = 12 in, exactly 25 %: "too late" (reached).
- BELOW25 (100): 12-01 found 6 + 5.9 = 11.9 in: no finding.
- OVERCAP (123): its 03-15 pumping removed 1,250 gal of a 1,000 gal device (entered by hand
  with ``fog pumpout add``, not in the hauler's file): "over capacity".
- UNREG (200): its 06-10 pumping by "Quick Vac LLC", not registered: "unregistered hauler".
- NEVER (250..254): never pumped. As of 2026-12-31 each interceptor is due 2026-04-01 and
  274 days overdue (04-01 is day 91 of 365); 250's trap is due 2026-02-05, 329 days overdue.
"""

from __future__ import annotations

CATEGORIES = ("restaurant", "school kitchen", "hospital kitchen", "bakery", "repair garage", "gasoline station",
              "car wash", "other")
HEADER = "licence,name,address,contact,category,device,kind,capacity_gal,liquid_depth_in,location,installed," \
         "interval_days"
HAULERS = (("Badger Grease Service", "WI-GH-101"), ("Lakeshore Pumping", "WI-GH-202"))

LATE, OVER25, EXACT25, BELOW25, OVERCAP, UNREG = (5, 17, 42), (8, 60), 99, 100, 123, 200
NEVER = tuple(range(250, 255))
TRAPS = tuple(range(0, 300, 50))

#: The findings as of 2026-12-31, counted by hand from the plan above.
EXPECTED = {"overdue": 3 * 1 + 2 * 2 + 5 + 1,       # LATE, OVER25 twice each, NEVER's 5 interceptors and 1 trap
            "too late": 2 + 1,                      # OVER25, EXACT25
            "over capacity": 1,                     # OVERCAP
            "unregistered hauler": 1,               # UNREG
            "missing device": 0}                    # none recorded missing

#: The six bad rows of the licence list and the reason each is rejected with.
BAD_ROWS = (
    ('B0001,,12 Elm St,,restaurant,GI-1,interceptor,1000,48,kitchen,2020-06-01,', "name: missing"),
    ('B0002,Club Nine,9 Elm St,,nightclub,GI-1,interceptor,1000,48,,2020-06-01,',
     "category: 'nightclub' is none of"),
    ('B0003,Big Burger,3 Elm St,,restaurant,GI-1,interceptor,big,48,,2020-06-01,',
     "capacity_gal: expected a number of gallons, got 'big'"),
    ('B0004,Moon Diner,4 Elm St,,restaurant,GI-1,interceptor,1000,48,,2020-13-01,',
     "installed: expected a date such as 2019-05-01, got '2020-13-01'"),
    ('F0007,Other Name Cafe,7 Main St,,restaurant,GI-2,interceptor,1000,48,,2020-06-01,',
     "licence F0007 is Cafe 7 on line "),
    ('F0009,Kitchen 9,109 Main St,,bakery,GI-1,interceptor,1000,48,rear yard,2020-06-01,',
     "Kitchen 9 device GI-1 is on line "),
)


def name(i: int) -> str:
    return f"Cafe {i}" if i % 3 else f"Kitchen {i}"


def address(i: int) -> str:
    return f"{100 + i} {'Main' if i % 2 else 'Oak'} St"


def licence_csv() -> str:
    rows = [HEADER]
    for i in range(300):
        cat = CATEGORIES[i % len(CATEGORIES)]
        rows.append(f"F{i:04d},{name(i)},{address(i)},Owner {i},{cat},GI-1,interceptor,1000,48,rear yard,"
                    f"2020-06-01,90")
        if i in TRAPS:
            rows.append(f"F{i:04d},{name(i)},{address(i)},Owner {i},{cat},HT-1,hydromechanical trap,50,12,"
                        f"under the sink,2020-06-01,35")
        if i == 9:                 # after the good rows of F0007 and F0009
            rows += [BAD_ROWS[4][0], BAD_ROWS[5][0]]
    rows[3:3] = [b for b, _ in BAD_ROWS[:4]]
    return "\n".join(rows) + "\n"


def _row(i, device, day, hauler, gal, fog, solids, manifest) -> str:
    return f"F{i:04d},{device},{day},{hauler},{gal},{fog},{solids},Palmyra WWTP,{manifest}"


def pumpout_csv() -> tuple[str, int]:
    """The haulers' year in one CSV, with two bad rows (an unknown licence, a manifest twice);
    returns the text and the number of good rows."""
    rows = ["establishment,device,date,hauler,gallons,fog_depth_in,solids_depth_in,receiving_facility,manifest"]
    n = 0
    for i in range(300):
        if i in NEVER:
            continue
        hauler = HAULERS[i % 2][0]
        days = ["2026-03-15", "2026-06-10", "2026-10-20" if i in LATE else "2026-09-05", "2026-12-01"]
        for k, day in enumerate(days):
            if i == OVERCAP and k == 0:
                continue
            fog, solids = 4, 3
            if i in OVER25 and k == 1:
                fog, solids = 8, 5
            if i == EXACT25 and k == 3:
                fog, solids = 6, 6
            if i == BELOW25 and k == 3:
                fog, solids = 6, 5.9
            who = "Quick Vac LLC" if i == UNREG and k == 1 else hauler
            rows.append(_row(i, "GI-1", day, who, 900, fog, solids, f"M-{i:04d}-{k}"))
            n += 1
        if i in TRAPS:
            for m in range(1, 13):
                rows.append(_row(i, "HT-1", f"2026-{m:02d}-01", hauler, 45, 1, 1, f"T-{i:04d}-{m:02d}"))
                n += 1
    rows.append(_row(999, "GI-1", "2026-05-01", HAULERS[0][0], 900, 4, 3, "M-X-1"))
    rows.append(_row(1, "GI-1", "2026-12-20", HAULERS[1][0], 900, 4, 3, "M-0001-0"))
    return "\n".join(rows) + "\n", n
