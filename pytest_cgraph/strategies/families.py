"""Program family names: torch-free, so the plugin can validate options cheaply."""

#: Families, selectable by name; ``mixed`` draws from all the others together.
FAMILIES = (
    "mutation",
    "views",
    "transfer",
    "autograd",
    "rng",
    "scalars",
    "schedules",
    "training",
    "serving",
    "spellings",
    "mixed",
)
