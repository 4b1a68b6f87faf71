"""The maintainers' web console under `/console/`: unmatched panics to draft records from, records with their
cards as each platform shows them, feedback. Off unless a credential is configured (`settings.py`)."""
