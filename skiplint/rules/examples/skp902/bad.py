# model.py:1:1: SKP902 internal error while analysing compositions: KeyError: 'enc'; please report
# The other findings of model.py are still reported; the run exits with status 2.
