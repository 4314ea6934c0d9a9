
#pragma once