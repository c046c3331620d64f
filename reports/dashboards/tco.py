"""Total cost of ownership of hardware options over a horizon: the buy-vs-wait calculator's arithmetic.

Plain data in, plain data out (no database, no clock); docs/tco.md states every assumption and works the
seed's V100-vs-A100 case through step by step. The model, per week w = 1 … horizon:

    load_w      = start load × (1 + growth × w / horizon)         A100-equivalent GPUs of work, around the clock
    needed_w    = load_w / relative performance                   GPUs of this option the load needs
    ordered     each week, the shortfall between needed_w and what was ordered before (never sold back)
    installed_w = what was ordered by week w − delivery delay      (arrives after the delay, paid on delivery)
    capex_w     = GPUs delivered in week w × price
    energy_w    = installed_w × watts / 1000 × 168 h × PUE × energy price per kWh
    maintenance_w = installed_w × maintenance per GPU per year / 52
    waiting_w   = (load_w − installed_w × relative performance) × 168 h    A100-equivalent GPU-hours that wait
    queue_w     = waiting_w × queue cost per waiting GPU-hour

Installed GPUs never exceed what the load needs, so each runs flat out and draws its rated power.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

HOURS_PER_WEEK = Decimal(168)
WEEKS_PER_YEAR = Decimal(52)
CENT = Decimal("0.01")


@dataclass(frozen=True)
class HardwareOption:
    name: str
    price: Decimal  # per GPU, in the cost currency
    relative_performance: Decimal  # work per GPU-hour, the reference GPU (A100) = 1
    watts: Decimal  # per GPU, at load, with its share of the node
    maintenance_per_year: Decimal  # per GPU per year
    delivery_weeks: int


@dataclass(frozen=True)
class Scenario:
    horizon_weeks: int
    start_load_gpus: Decimal  # reference-GPU equivalents busy around the clock at week 0
    growth_pct: Decimal  # load growth over the whole horizon
    energy_price_per_kwh: Decimal
    pue: Decimal  # power usage effectiveness: facility power over IT power (cooling)
    queue_cost_per_gpu_hour: Decimal  # what one reference GPU-hour of work costs when it waits instead of running


@dataclass(frozen=True)
class WeekCost:
    week: int
    load_gpus: Decimal
    needed_gpus: Decimal
    installed_gpus: Decimal
    capex: Decimal
    energy: Decimal
    maintenance: Decimal
    waiting_gpu_hours: Decimal
    queue: Decimal

    @property
    def total(self) -> Decimal:
        return self.capex + self.energy + self.maintenance + self.queue


@dataclass(frozen=True)
class OptionCost:
    option: HardwareOption
    weeks: list[WeekCost] = field(default_factory=list)

    def _sum(self, name: str) -> Decimal:
        return sum((getattr(w, name) for w in self.weeks), Decimal(0))

    @property
    def gpus_bought(self) -> Decimal:
        return self.weeks[-1].installed_gpus if self.weeks else Decimal(0)

    @property
    def capex(self) -> Decimal:
        return self._sum("capex")

    @property
    def energy(self) -> Decimal:
        return self._sum("energy")

    @property
    def maintenance(self) -> Decimal:
        return self._sum("maintenance")

    @property
    def waiting_gpu_hours(self) -> Decimal:
        return self._sum("waiting_gpu_hours")

    @property
    def queue(self) -> Decimal:
        return self._sum("queue")

    @property
    def total(self) -> Decimal:
        return self.capex + self.energy + self.maintenance + self.queue

    @property
    def work_gpu_hours(self) -> Decimal:
        """Reference GPU-hours of work over the horizon (the same for every option)."""
        return sum((w.load_gpus * HOURS_PER_WEEK for w in self.weeks), Decimal(0))

    @property
    def cost_per_work_gpu_hour(self) -> Decimal:
        work = self.work_gpu_hours
        return self.total / work if work else Decimal(0)

    def cumulative(self) -> list[Decimal]:
        running, result = Decimal(0), []
        for week in self.weeks:
            running += week.total
            result.append(running)
        return result


@dataclass(frozen=True)
class Comparison:
    scenario: Scenario
    options: list[OptionCost]

    @property
    def cheapest(self) -> OptionCost:
        return min(self.options, key=lambda o: o.total)

    def versus_cheapest_pct(self, option: OptionCost) -> Decimal:
        """How much more `option` costs than the cheapest, in % of the cheapest's total."""
        base = self.cheapest.total
        return (option.total - base) * 100 / base if base else Decimal(0)


def option_cost(*, option: HardwareOption, scenario: Scenario) -> OptionCost:
    """One option's week-by-week costs over the scenario's horizon (the model in the module docstring)."""
    horizon = scenario.horizon_weeks
    growth = scenario.growth_pct / 100
    kwh_per_gpu_week = option.watts / 1000 * HOURS_PER_WEEK * scenario.pue
    ordered: list[Decimal] = []  # ordered[i]: cumulative GPUs ordered by the end of week i + 1
    weeks = []
    installed_before = Decimal(0)
    for week in range(1, horizon + 1):
        load = scenario.start_load_gpus * (1 + growth * week / horizon)
        needed = load / option.relative_performance
        ordered.append(max(needed, ordered[-1] if ordered else Decimal(0)))
        arrived_by = week - option.delivery_weeks
        installed = ordered[arrived_by - 1] if arrived_by >= 1 else Decimal(0)
        served = installed * option.relative_performance
        waiting = max(Decimal(0), load - served) * HOURS_PER_WEEK
        weeks.append(WeekCost(
            week=week,
            load_gpus=load,
            needed_gpus=needed,
            installed_gpus=installed,
            capex=(installed - installed_before) * option.price,
            energy=installed * kwh_per_gpu_week * scenario.energy_price_per_kwh,
            maintenance=installed * option.maintenance_per_year / WEEKS_PER_YEAR,
            waiting_gpu_hours=waiting,
            queue=waiting * scenario.queue_cost_per_gpu_hour,
        ))
        installed_before = installed
    return OptionCost(option=option, weeks=weeks)


def compare(*, options: list[HardwareOption], scenario: Scenario) -> Comparison:
    return Comparison(scenario=scenario, options=[option_cost(option=o, scenario=scenario) for o in options])


# The seed's case (docs/tco.md, "The worked example"): used V100s at 55% of an A100's price and 40% of its
# performance, six months at 30% load growth. Wattage, energy price, PUE and maintenance are public list
# figures; the queue cost per waiting GPU-hour is the one input chosen so that the model gives the seed's +18%.
SEED_SCENARIO = Scenario(
    horizon_weeks=26,
    start_load_gpus=Decimal(16),
    growth_pct=Decimal(30),
    energy_price_per_kwh=Decimal("0.15"),
    pue=Decimal("1.5"),
    queue_cost_per_gpu_hour=Decimal("3.33"),
)
SEED_A100 = HardwareOption(
    name="A100 (new)", price=Decimal(10000), relative_performance=Decimal(1), watts=Decimal(400),
    maintenance_per_year=Decimal(800), delivery_weeks=6,
)
SEED_V100 = HardwareOption(
    name="V100 (used)", price=Decimal(5500), relative_performance=Decimal("0.4"), watts=Decimal(300),
    maintenance_per_year=Decimal(800), delivery_weeks=1,
)
SEED_OPTIONS = [SEED_A100, SEED_V100]
