"""Job 2, Agent Skills: three disclosure levels measured, S-rules judged.

``pytest_toll.skills.measure_skills`` is the public entry point.
"""

from pytest_toll.skills.measuring import measure_skills

__all__ = ["measure_skills"]
